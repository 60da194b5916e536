#pragma once
// One function per CLI verb; each is a thin wrapper around one library call.
#include "args.h"
#include "embshard/core/context.h"

namespace embshard::cli {

int run_stats(Args& args, const Context& ctx);    ///< embshard stats --data FILE --out FILE
int run_pool(Args& args, const Context& ctx);     ///< embshard pool [--seed N] --out FILE | --check
int run_task(Args& args, const Context& ctx);     ///< embshard task gen ...
int run_check(Args& args, const Context& ctx);    ///< embshard check --task T --plan P
int run_list(Args& args, const Context& ctx);     ///< embshard list
int run_default(Args& args, const Context& ctx);  ///< embshard (no verb): the main job

}  // namespace embshard::cli
