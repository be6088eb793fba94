"""Evaluation metrics: Best-of-N (prm@N per aggregation, maj@N, pass@N, orm@N) and the official
ProcessBench metric, with bootstrap confidence intervals (CLI: `prm-lessons eval {bon,processbench}`,
in prm_lessons.cli).

Definitions (docs/architecture.md "Evaluation outputs"):

Best-of-N, per problem over its first N responses (by sample_idx):
- response score = aggregation of its step scores: product (the paper's default), min, last, mean;
  a response without a finite score (no step scores, an empty list, NaN or ±inf) is never picked;
- prm@N (`prm_<agg>`) = correctness of the highest-scoring response; ties → lowest sample_idx; a
  problem none of whose responses has a finite score counts as wrong and is reported (`unscored`,
  `n_unscored` in bon_metrics);
- orm@N (`orm`) = the same with one outcome score per response (an ORM's single "step" score);
- maj@N (`maj`) = correctness of the first response carrying the most frequent answer; ties between
  equally frequent answers → the answer that appears first (as Qwen2.5-Math `rm_maj_eval.py`, whose
  Counter.most_common keeps first-seen order). Answers are grouped by `maj_grouping`:
  `harness` (the Qwen2.5-Math harness's: its `strip_string` form of the answer, prm_lessons.grading.answer_key,
  and a response without an answer votes for the empty answer, as rm_maj_eval.py counts it; the paper
  config's), `exact` (the string as is), `normalized` (whitespace removed, surrounding $ and a trailing
  period stripped, lower-cased) or `math_verify` (a response joins the first earlier group whose
  representative math-verify judges equivalent, as the harness's `use_symbol=True`; each comparison in
  a grading worker killed after a timeout). Except under `harness`, responses without an answer (pred
  null/empty) do not vote; a problem whose responses all lack an answer counts as wrong (under
  `harness`, an empty majority picks a response without an answer, which is wrong);
- pass@N (`pass`) = any of the N responses correct.
Rows are validated first (check_bon_rows): `correct` must be a boolean or 0/1, never a string.
Benchmark accuracy = mean over problems; `average` = unweighted mean over benchmarks. Every number
has a percentile bootstrap interval from resampling problems (within each benchmark; the average's
interval resamples every benchmark and averages, replicate by replicate), fixed seed. Every selector
is also compared with maj@N by a paired bootstrap (same resampled problems): `vs_maj`, rows
`<col>-maj` of the long table.

ProcessBench (official `run_eval.py`): per subset, error_acc = mean over label != −1 of
[prediction == label]; correct_acc = mean over label == −1 of [prediction == −1];
f1 = 2·e·c/(e+c), 0 when both are 0; average_f1 = unweighted mean of the subset F1s. A PRM's
prediction = index of the first step whose score is < threshold, −1 if none. A prediction of None
(an unparsable critic answer) never equals the label: it is counted wrong and reported.
A tuned threshold (evaluate_processbench's `tune_on`) maximises the average F1 on a dev split (disjoint
ids), or is cross-fitted over two folds of the cases (no case scored with a threshold tuned on itself),
or, ProcessBench's own rule (§4.1), maximises the F1 of the evaluated GSM8K subset (in-sample). Model-free
baselines (always_correct, first_step, structure: the best rule on subset × number of steps, fitted on the dev
split) see only structure_view(cases); paired_f1_difference compares two predictors on the same bootstrap draws.

Modules (one concept each, so that a job's code closure, prm_lessons.plan.codedeps, holds only what it runs;
this file imports nothing):
- `select`: aggregate, best_index, best_or_none, the string answer keys and the majority winner (no grading);
- `vote`: vote_keys, majority_index, math_verify_groups (maj@N grouping; imports the grading pool);
- `bon`: first-N selection, pass@N / maj@N baselines, bon_problem_table, bon_metrics (with vs_maj), bon_long_rows;
- `processbench`: first_error, F1, processbench_metrics, threshold tuning and cross-fitting,
  evaluate_processbench, long rows, paired_f1_difference (rows from a file: cli.predictions_from_rows);
- `model_free`: the model-free ProcessBench baselines (structure_view … crossfit_structure_predictions);
- `judge_processbench`: the labelling judge as a ProcessBench critic (case slice, rows beside the structure
  baseline) and the lesson-2 verdict sentence (lesson2_verdict);
- `stats`: bootstrap_means and percentile intervals;
- `rows`: validation of Best-of-N rows and ProcessBench inputs (InputError naming every bad row or id).
"""
