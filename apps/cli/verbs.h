#pragma once
// Every verb of `embshard` and `embshard-train` with its options, declared once (verbs.cpp): the
// option parser (args.h) accepts exactly these, `--help` and `embshard help` print them, and
// `embshard help --markdown` writes docs/cli.md (checked current by Cli.DocsCliMdIsCurrent).
#include <ostream>
#include <string>
#include <vector>

namespace embshard::cli {

struct OptionDoc {
  std::string name;      ///< without the dashes
  std::string value;     ///< what it takes ("N", "FILE"); empty for a flag
  std::string fallback;  ///< the default as printed and read ("" when required, unset or computed
                         ///< by the code); the one place of a default (args.h)
  std::string help;      ///< one line
};

struct VerbDoc {
  std::string name;                ///< "plan", "task gen", "train cost"
  std::string summary;             ///< one line
  std::vector<OptionDoc> options;  ///< the verb's own (the common ones are common_options())
  std::string notes;               ///< more lines, or ""
};

/** The options every verb takes: --threads, --quiet, --verbose. */
[[nodiscard]] const std::vector<OptionDoc>& common_options();
/** Every verb, in the order `embshard help` lists them ("" is the main job). */
[[nodiscard]] const std::vector<VerbDoc>& verb_docs();
/** The verb called `name`, or nullptr. */
[[nodiscard]] const VerbDoc* find_verb_doc(const std::string& name);
/** The sub-verbs of `verb` ("task" → {"gen"}); empty for a verb without them. */
[[nodiscard]] std::vector<std::string> sub_verbs(const std::string& verb);

/**
 * The declared verb `words` name under `verb` ("task gen" for `task gen ...`, `words` after the
 * verb). When `words` ask for help (--help, -h), prints it to `help` — every sub-verb's when none
 * is named — and returns nullptr. A verb of sub-verbs without a known one is an Error listing them.
 */
[[nodiscard]] const VerbDoc* resolve_verb(const std::string& verb, const std::vector<std::string>& words,
                                          std::ostream& help);

/** `embshard VERB --help`: usage, the options with defaults, the notes. */
[[nodiscard]] std::string verb_help(const VerbDoc& verb);
/** `embshard help`: every verb with its summary. */
[[nodiscard]] std::string usage();
/** `embshard help --markdown`: docs/cli.md. */
[[nodiscard]] std::string cli_markdown();

}  // namespace embshard::cli
