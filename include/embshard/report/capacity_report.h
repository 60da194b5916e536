#pragma once
/**
 * @file capacity_report.h
 * @brief The report of a capacity curve (`embshard size --report`): one self-contained HTML file,
 *        like the plan reports (html_report.h), with the judged step at every device count
 *        planned, the judge's lower bound beside it, the target as a line and the answer marked,
 *        then the same figures as a sortable table.
 *
 * The devices axis is logarithmic when the counts span more than a factor of 16; counts where the
 * sharder found no plan are drawn as crosses on the axis with their reason as the tooltip.
 */
#include <string>

#include "embshard/eval/what_if.h"

namespace embshard {

/** The curve's step-against-devices chart as inline SVG (file comment). */
[[nodiscard]] std::string capacity_chart_svg(const CapacityCurve& curve);

/** The whole page; Error when the curve has no point. */
[[nodiscard]] std::string capacity_report_html(const CapacityCurve& curve);

}  // namespace embshard
