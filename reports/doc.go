// Package reports loads a run's output directory, renders it as a terminal table, markdown, JSON, JUnit XML or a self-contained HTML page, and compares two runs with paired statistics to gate changes in CI.
//
// # Reading runs
//
// Load reads an output directory (summary.json, results.jsonl, cells/), a
// summary.json with its siblings, or a JSON report written by this package,
// so that a single report file can serve as a baseline. Every file is
// checked against evals.SchemaVersion before anything else, and problems
// come back as *Error naming the file, line, column and field.
//
// # Rendering
//
// Build turns a run into a Report, the one source of the numbers in every
// format; Render and WriteFiles write the formats (see Format), RenderWith
// fits the table to a terminal (TextOptions), and WriteCell prints one
// cell with its transcript. Reports are
// deterministic: cells are ordered by model and profile (as the summary
// orders its groups), then case and epoch, whatever order they finished in;
// durations, timestamps and the directory a run was loaded from are never
// printed.
//
// # Comparing
//
// Compare pairs cells by case, model, profile and epoch. The choices behind
// its gate:
//
//   - Pass/fail is tested with McNemar's exact test (a binomial test on the
//     discordant pairs), scores with the exact sign test, overall and, for
//     pass/fail, per model × profile, since a profile change often breaks one
//     group only. The p-values form one family adjusted with Holm's method,
//     so testing several groups does not raise the false-alarm rate above
//     alpha.
//   - Epochs of a case are correlated, so confidence intervals come from a
//     cluster bootstrap that resamples cases with all their epochs (seeded,
//     percentile intervals at 1−alpha). The exact tests treat pairs as
//     independent; requiring both a significant test and an interval beyond
//     the tolerance keeps either weakness from deciding alone.
//   - A regression fails the gate (exit 1) only when its adjusted p-value is
//     below alpha and its interval lies wholly below −tolerance; a drop that
//     is significant but within the tolerance is reported as such and
//     passes.
//   - The minimum detectable effect is computed for the overall pass rate at
//     alpha divided by the number of tests (Holm's first step), at the
//     observed discordance (or, when no pair changed, the discordance two
//     independent runs at this pass rate would show), and never below the
//     fewest one-way flips the exact test can call significant.
//   - Errored cells are not regressions and missing cells cannot be paired:
//     either makes the comparison unjudgeable (exit 2), naming the cells.
//     Errored pairs are left out of the statistics shown alongside.
//   - A case that passes some epochs and fails others on either side is
//     flaky (pass^k < pass@k) and listed apart from new failures and passes;
//     its flips still count in the tests.
package reports
