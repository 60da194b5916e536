#pragma once
// The page every HTML report shares (private to src/report): its styles, the table-sorting
// script and the `?selfcheck` hook the browser test reads (html_report.h), and small formatters.
#include <string>
#include <utility>
#include <vector>

namespace embshard::report {

/** A whole HTML document: `title` (escaped) and `body` (HTML, as given), styles and scripts. */
[[nodiscard]] std::string page(const std::string& title, const std::string& body);

/** `value` with exactly `decimals` decimals. */
[[nodiscard]] std::string fixed(double value, int decimals);

/** A two-column table of (name, value) rows, both escaped; "" values read "(not recorded)". */
[[nodiscard]] std::string key_value_table(const std::vector<std::pair<std::string, std::string>>& rows);

}  // namespace embshard::report
