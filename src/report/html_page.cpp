#include "report/html_page.h"

#include <cstdio>
#include <sstream>

#include "embshard/core/markup.h"

namespace embshard::report {

std::string page(const std::string& title, const std::string& body) {
  std::ostringstream out;
  out << "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>\n<title>" << xml_escape(title)
      << "</title>\n<style>\n"
         "body{font-family:sans-serif;margin:24px;color:#222;max-width:1200px}\n"
         "h1{font-size:22px}h2{font-size:18px;margin-top:32px;border-bottom:1px solid #ccc}\n"
         "h3{font-size:15px}table{border-collapse:collapse;font-size:13px;margin:8px 0}\n"
         "td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}\n"
         "td:first-child,th:first-child{text-align:left}th{background:#f3f3f3}\n"
         "th.sortable{cursor:pointer}th.sortable:after{content:' \\2195';color:#999}\n"
         ".prov td{text-align:left}.note{color:#555;font-size:13px}figure{margin:12px 0}\n"
         "figcaption{font-size:13px;color:#444}svg{display:block}\n"
         "@media print{th.sortable:after{content:''}}\n"
         "</style></head><body>\n"
      << body
      << "<script>\n"
         "window.__errors=[];window.addEventListener('error',e=>window.__errors.push(String(e.message)));\n"
         "for(const t of document.querySelectorAll('table.sortable')){\n"
         " t.querySelectorAll('th').forEach((th,i)=>{th.classList.add('sortable');let asc=false;\n"
         "  th.addEventListener('click',()=>{asc=!asc;const rows=[...t.tBodies[0].rows];\n"
         "   rows.sort((a,b)=>{const x=a.cells[i].dataset.v??a.cells[i].textContent,"
         "y=b.cells[i].dataset.v??b.cells[i].textContent;\n"
         "    const nx=parseFloat(x),ny=parseFloat(y);const c=isNaN(nx)||isNaN(ny)?x.localeCompare(y):nx-ny;"
         "return asc?c:-c;});\n"
         "   rows.forEach(r=>t.tBodies[0].appendChild(r));});});}\n"
         "if(location.search.includes('selfcheck')){const p=document.createElement('pre');p.id='selfcheck';\n"
         " const s=[...document.querySelectorAll('svg')].map(e=>{const b=e.getBoundingClientRect();"
         "return {w:b.width,h:b.height,n:e.querySelectorAll('rect,circle,line').length};});\n"
         " p.textContent=JSON.stringify({svgs:s,errors:window.__errors});document.body.appendChild(p);}\n"
         "</script>\n</body></html>\n";
  return out.str();
}

std::string fixed(double value, int decimals) {
  char text[48];
  std::snprintf(text, sizeof text, "%.*f", decimals, value);
  return text;
}

std::string key_value_table(const std::vector<std::pair<std::string, std::string>>& rows) {
  std::ostringstream out;
  out << "<table class='prov'>\n";
  for (const auto& [name, value] : rows) {
    out << "<tr><th>" << xml_escape(name) << "</th><td>" << xml_escape(value.empty() ? "(not recorded)" : value)
        << "</td></tr>\n";
  }
  out << "</table>\n";
  return out.str();
}

}  // namespace embshard::report
