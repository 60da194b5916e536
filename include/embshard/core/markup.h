#pragma once
/**
 * @file markup.h
 * @brief Text into HTML and SVG: the one escaping rule every writer of markup uses, so that a
 *        sharder spec with a file path or a table name with `<` never breaks a page or a chart.
 */
#include <string>

namespace embshard {

/** `text` with `&`, `<`, `>`, `"` and `'` replaced by their entities (element text and attributes). */
[[nodiscard]] std::string xml_escape(const std::string& text);

}  // namespace embshard
