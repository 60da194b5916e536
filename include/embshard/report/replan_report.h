#pragma once
/**
 * @file replan_report.h
 * @brief The report of a re-plan (`embshard replan --report`): one self-contained HTML file, like
 *        the capacity report (capacity_report.h), with every candidate's judged step against the
 *        bytes it moves — the curve from the kept plan to the relabelled from-scratch plan, the
 *        priced searches from the kept plan, the budget as a line and the chosen plan marked —,
 *        then the bytes each device sends and receives, and every candidate as a sortable table.
 */
#include <string>

#include "embshard/eval/replan.h"

namespace embshard {

/** The step-against-bytes-moved chart as inline SVG (file comment). */
[[nodiscard]] std::string replan_chart_svg(const ReplanResult& result);

/** The whole page; Error when the result has no point. */
[[nodiscard]] std::string replan_report_html(const ReplanResult& result);

}  // namespace embshard
