//! The console line of a load spread across several targets (docs/metrics.md, "Targets"): one
//! per benchmark, each target's share of what was sent and how it ended.

use crate::figures::model::RunReport;

/// One console line per benchmark that ran against several targets.
pub fn target_notes(run: &RunReport) -> Vec<String> {
    run.benchmarks
        .iter()
        .filter_map(|b| {
            let targets = b.targets.as_ref()?;
            let parts: Vec<String> = targets
                .iter()
                .map(|t| {
                    format!(
                        "{} {} sent, {} completed, {} errored, {} output tokens",
                        t.url, t.requests, t.completed, t.errored, t.output_tokens
                    )
                })
                .collect();
            Some(format!("targets {}: {}", b.label, parts.join("; ")))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::figures::targets::TargetCounts;
    use crate::test_support::open_loop;

    #[test]
    fn one_line_per_benchmark_with_several_targets_and_none_with_one() {
        let mut run = RunReport::new("id", "now");
        run.benchmarks.push(open_loop(|_| 10));
        assert!(target_notes(&run).is_empty());
        let t = |url: &str, n: u64| TargetCounts {
            url: url.into(),
            requests: n,
            completed: n - 1,
            errored: 1,
            incomplete: 0,
            cancelled: 0,
            output_tokens: 3 * n,
        };
        run.benchmarks[0].targets = Some(vec![t("http://a/v1", 3), t("http://b/v1", 2)]);
        let label = run.benchmarks[0].label.clone();
        assert_eq!(
            target_notes(&run),
            [format!(
                "targets {label}: http://a/v1 3 sent, 2 completed, 1 errored, 9 output tokens; \
                 http://b/v1 2 sent, 1 completed, 1 errored, 6 output tokens"
            )]
        );
    }
}
