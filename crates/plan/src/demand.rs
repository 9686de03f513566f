//! The demand a plan sizes its fleets for: `--demand`, or the peak rate of the trace the
//! sweeps replay over `--demand-window` (docs/planning.md, "The demand"), grown by `--growth`.

use crate::fleet::Demand;
use bench_runner::settings::DataSettings;
use bench_runner::UsageError;

use crate::settings::PlanSettings;

/// The demand of `plan`, read from the sweeps' data when it gives none.
pub fn demand_of(plan: &PlanSettings, data: &DataSettings) -> Result<Demand, UsageError> {
    if let Some(d) = plan.demand {
        return Ok(Demand::new(d, plan.growth, "--demand"));
    }
    let no = || {
        UsageError::new(
            "no demand to plan for: give --demand REQ_PER_S (requests/s of the load given), or a trace (--data trace=FILE) whose peak rate is the demand",
        )
    };
    let spec = bench_loader::DataSpec::parse(&data.data, data.data_column.as_deref())
        .map_err(|e| UsageError::new(format!("--data: {e}")))?;
    let bench_loader::DataSpec::Trace(trace) = spec else {
        return Err(no());
    };
    let window = (plan.demand_window * 1e9) as bench_core::Nanos;
    let peak = bench_loader::trace::peak_rate(&trace, window)
        .map_err(|e| UsageError::new(e.to_string()))?
        .ok_or_else(|| {
            UsageError::new(format!(
                "{}: under two rows over time: no rate to plan for (give --demand)",
                trace.path.display()
            ))
        })?;
    let source = format!(
        "peak of {} over {} s windows",
        trace.path.display(),
        plan.demand_window
    );
    Ok(Demand::new(peak, plan.growth, source))
}
