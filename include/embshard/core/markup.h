#pragma once
/**
 * @file markup.h
 * @brief Text into HTML and SVG, and onto a terminal: the one escaping rule every writer of markup
 *        uses, so that a sharder spec with a file path or a table name with `<` never breaks a page
 *        or a chart, and the one every message printed on a terminal goes through, so a name with a
 *        newline or an escape sequence keeps an error one line and the terminal as it was.
 */
#include <string>
#include <string_view>

namespace embshard {

/** `text` with `&`, `<`, `>`, `"` and `'` replaced by their entities (element text and
 *  attributes), and every control character XML cannot hold (C0 but tab, newline and carriage
 *  return; DEL) replaced by U+FFFD, so the document stays well-formed whatever a name holds. */
[[nodiscard]] std::string xml_escape(const std::string& text);

/** `text` for a terminal line: newline, carriage return and tab as `\n`, `\r`, `\t`, other
 *  control characters (escape sequences included) and DEL as `\xNN`; everything else as is. */
[[nodiscard]] std::string one_line(std::string_view text);

/** `bytes` in GiB with `significant_digits` (printf's %g): "0.715256 GiB" at 6, "10.6 GiB" at 3. */
[[nodiscard]] std::string gib_text(double bytes, int significant_digits);

}  // namespace embshard
