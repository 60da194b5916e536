#include "embshard/core/markup.h"

#include <cstdio>

namespace embshard {

std::string xml_escape(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: {
        const auto u = static_cast<unsigned char>(c);
        const bool forbidden = (u < 0x20 && c != '\t' && c != '\n' && c != '\r') || u == 0x7f;
        out += forbidden ? "\xEF\xBF\xBD" : std::string(1, c);  // U+FFFD
      }
    }
  }
  return out;
}

std::string one_line(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (u < 0x20 || u == 0x7f) {
      static const char* const kHex = "0123456789abcdef";
      out += "\\x";
      out += kHex[u >> 4];
      out += kHex[u & 15];
    } else {
      out += c;
    }
  }
  return out;
}

std::string gib_text(double bytes, int significant_digits) {
  char text[48];
  std::snprintf(text, sizeof text, "%.*g GiB", significant_digits, bytes / (1024.0 * 1024.0 * 1024.0));
  return text;
}

}  // namespace embshard
