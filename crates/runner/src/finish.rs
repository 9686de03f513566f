//! Finishing a run: the sweep's capacity added, and what went wrong gathered in the order the
//! caller reports it.

use bench_worker::Fleet;

use crate::observer::ReportObserver;
use crate::{data, Error, Finished, UsageError};

impl ReportObserver {
    /// After the benchmarks ran (or failed: `result`): a sweep's capacity, then the run's
    /// report with what went wrong. `interrupted`: the caller's token stopped the run;
    /// `data_failure`: why the data stream broke mid-run, if it did.
    pub(crate) fn conclude(
        mut self,
        result: anyhow::Result<(bench_scheduler::RunOutcome, data::WorkStream)>,
        interrupted: bool,
        data_failure: Option<String>,
        fleet: &Fleet,
    ) -> Finished {
        if let Ok((outcome, _)) = &result {
            if !outcome.interrupted && self.run.trials.is_none() {
                self.set_capacity(outcome.capacity.clone());
            }
        }
        let failure = match result {
            Err(e) => Some(Error::from(e.context("the run failed"))),
            Ok(_) => self.failure(interrupted, data_failure),
        };
        Finished {
            report: self.run,
            interrupted,
            failure,
            ending_notes: self.ending_notes,
            resent_requests: fleet.resent_requests(),
            ignored_events: fleet.ignored_events(),
        }
    }

    /// The first of: the report files that could not be written, the vLLM result file, the
    /// server gone, and (unless the run was interrupted) the data stream broken.
    fn failure(&self, interrupted: bool, data_failure: Option<String>) -> Option<Error> {
        let failed = |msg: String| Some(Error::Failed(msg.into()));
        if let Some(e) = self.files.failures() {
            return failed(format!(
                "writing the report files failed (the other files were written): {e}"
            ));
        }
        if let Some(e) = &self.write_error {
            return failed(format!("writing the vLLM result file failed: {e}"));
        }
        if let Some(why) = &self.server_gone {
            return failed(format!(
                "{why}; the run was stopped (finished benchmarks are in the report)"
            ));
        }
        if interrupted {
            return None;
        }
        // Bad data is bad input, even when it shows only mid-run (finished benchmarks are in
        // the report).
        data_failure.map(|e| {
            Error::Usage(UsageError::new(format!(
                "the data stream broke during the run: {e}"
            )))
        })
    }
}
