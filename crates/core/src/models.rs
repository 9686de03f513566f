//! Model and LoRA mixes (`--model a,b`, `--model base:0.5,lora-a:0.3`, vLLM's `--lora-modules`,
//! AIPerf's `--model-selection-strategy`, inference-perf's `lora_traffic_split`; docs/cli.md,
//! "Model mixes"): which model each request names. The rule lives here, below the worker that
//! sends and the report that counts per model, so both read one definition.
//!
//! A request's choice is a pure function of its index in the benchmark's whole schedule (a
//! shard passes its requests' indices in the whole schedule, as [`crate::Cancellation`] does)
//! and, for `random`, the run's seed: the same on every run, in every shard, whatever the
//! order requests finish in, and O(1) with no allocation.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// Most models one mix may name (a record names its model by a `u16`-sized index).
pub const MAX_MODELS: usize = 1024;

/// Longest period of a weighted mix's sequence; weights that need a longer one are rounded to
/// parts of [`WEIGHT_UNITS`].
const MAX_PERIOD: u64 = 1 << 16;

/// The parts weights are rounded to when they need a period longer than [`MAX_PERIOD`].
const WEIGHT_UNITS: u64 = 10_000;

/// How each request's model is chosen from the mix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ModelSelection {
    /// Request `k` (of the whole schedule) names model `k mod n`: AIPerf's `round_robin`,
    /// vLLM's `round-robin`.
    RoundRobin,
    /// Each request draws its model independently with the models' weights (equal without
    /// weights), from the run's seed: vLLM's default, AIPerf's `random`, inference-perf's.
    Random,
    /// Deterministic and evenly spread: over the first `n` requests of the schedule, every
    /// model's count is within 1 of `n` times its share (the largest-deficit sequence of the
    /// weights, repeated).
    Weighted,
}

impl ModelSelection {
    /// Every selection, in the order `--help` lists them.
    pub const ALL: [ModelSelection; 3] = [
        ModelSelection::RoundRobin,
        ModelSelection::Random,
        ModelSelection::Weighted,
    ];

    /// The command-line and profile name.
    pub fn name(self) -> &'static str {
        match self {
            ModelSelection::RoundRobin => "round-robin",
            ModelSelection::Random => "random",
            ModelSelection::Weighted => "weighted",
        }
    }
}

impl fmt::Display for ModelSelection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for ModelSelection {
    type Err = String;

    /// A name of [`ModelSelection::ALL`], case-insensitive, `_` for `-` (AIPerf's
    /// `round_robin`).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let t = s.trim().replace('_', "-");
        ModelSelection::ALL
            .into_iter()
            .find(|m| m.name().eq_ignore_ascii_case(&t))
            .ok_or_else(|| {
                format!("unknown model selection `{s}`; expected round-robin, random or weighted")
            })
    }
}

/// One model of a mix as given: its name and weight (`None`: unweighted).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelWeight {
    /// The name sent in the request body's `model` field.
    pub name: String,
    /// Its weight, when given (any positive scale: shares are weights over their sum).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub weight: Option<f64>,
}

/// The list as `--model` takes it: `a,b` or `a:0.5,b:0.5`.
pub fn model_list_text(models: &[ModelWeight]) -> String {
    models
        .iter()
        .map(|m| match m.weight {
            Some(w) => format!("{}:{w}", m.name),
            None => m.name.clone(),
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// Parses `a,b` or `base:0.5,lora-a:0.3` (a weight is the number after the last `:`; a name
/// such as `llama3:8b`, whose suffix is no number, keeps its colon). The reason when an item is
/// empty or a weight is not a positive number.
pub fn parse_model_list(text: &str) -> Result<Vec<ModelWeight>, String> {
    let mut out = Vec::new();
    for (i, item) in text.split(',').map(str::trim).enumerate() {
        if item.is_empty() {
            return Err(format!(
                "model {} of the list is empty; separate names with single commas",
                i + 1
            ));
        }
        let weighted = item.rsplit_once(':').and_then(|(name, w)| {
            let w = w.trim().parse::<f64>().ok()?;
            Some((name.trim(), w))
        });
        match weighted {
            Some((name, w)) => {
                if name.is_empty() {
                    return Err(format!("`{item}` has a weight but no model name"));
                }
                if !(w.is_finite() && w > 0.0) {
                    return Err(format!("`{item}`: a weight must be a positive number"));
                }
                out.push(ModelWeight {
                    name: name.to_string(),
                    weight: Some(w),
                });
            }
            None => out.push(ModelWeight {
                name: item.to_string(),
                weight: None,
            }),
        }
    }
    Ok(out)
}

/// The models a benchmark's requests name, and how each request's is chosen.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelMix {
    names: Vec<String>,
    /// Each model's share of the requests (sums to 1).
    shares: Vec<f64>,
    /// Whether weights were given.
    weighted: bool,
    selection: ModelSelection,
    seed: u64,
    /// A shard's first index and stride in the whole schedule (0 and 1 unsharded).
    offset: u64,
    stride: u64,
    /// Weighted: one period of the sequence, a model index per request.
    period: Vec<u16>,
    /// Random: the upper ends of each model's range of a uniform 64-bit draw (the last is
    /// `u64::MAX`).
    thresholds: Vec<u64>,
}

impl ModelMix {
    /// The mix of `models` chosen by `selection` (default: weighted when weights are given,
    /// else round-robin), `random` drawing from `seed`. The reason when the list is empty or
    /// too long, names repeat, only some models carry a weight, or round-robin is given
    /// weights.
    pub fn new(
        models: &[ModelWeight],
        selection: Option<ModelSelection>,
        seed: u64,
    ) -> Result<Self, String> {
        check_names(models)?;
        let given = models.iter().filter(|m| m.weight.is_some()).count();
        if given != 0 && given != models.len() {
            return Err("give every model a weight (name:weight) or none".into());
        }
        let weighted = given > 0;
        let selection = selection.unwrap_or(if weighted {
            ModelSelection::Weighted
        } else {
            ModelSelection::RoundRobin
        });
        if weighted && selection == ModelSelection::RoundRobin {
            return Err(
                "round-robin takes no weights; weights need weighted or random selection".into(),
            );
        }
        let weights: Vec<f64> = models.iter().map(|m| m.weight.unwrap_or(1.0)).collect();
        let sum: f64 = weights.iter().sum();
        let shares: Vec<f64> = weights.iter().map(|w| w / sum).collect();
        let period = match selection {
            ModelSelection::Weighted => largest_deficit(&integer_weights(&weights)),
            _ => Vec::new(),
        };
        let thresholds = match selection {
            ModelSelection::Random => thresholds(&shares),
            _ => Vec::new(),
        };
        Ok(Self {
            names: models.iter().map(|m| m.name.clone()).collect(),
            shares,
            weighted,
            selection,
            seed,
            offset: 0,
            stride: 1,
            period,
            thresholds,
        })
    }

    /// The same mix for shard `index` of `count` (which sends requests `index`, `index +
    /// count`, ... of the whole schedule), so that every request names the model it would
    /// name unsharded.
    pub fn for_shard(mut self, index: u32, count: u32) -> Self {
        self.offset = u64::from(index);
        self.stride = u64::from(count.max(1));
        self
    }

    /// The model names, in the order given (the indices [`ModelMix::choose`] returns).
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// Model `index`'s name.
    pub fn name(&self, index: usize) -> &str {
        self.names.get(index).map_or("", String::as_str)
    }

    /// Each model's share of the requests, in order (summing to 1).
    pub fn shares(&self) -> &[f64] {
        &self.shares
    }

    /// Whether the models were given weights.
    pub fn weighted(&self) -> bool {
        self.weighted
    }

    /// How requests choose.
    pub fn selection(&self) -> ModelSelection {
        self.selection
    }

    /// The model of the request with sequence number `id` in its benchmark (of this shard),
    /// as an index into [`ModelMix::names`]. O(1), no allocation.
    pub fn choose(&self, id: u64) -> usize {
        let k = self.offset.wrapping_add(id.wrapping_mul(self.stride));
        let n = self.names.len().max(1);
        match self.selection {
            ModelSelection::RoundRobin => (k % n as u64) as usize,
            ModelSelection::Weighted => {
                let p = self.period.len().max(1) as u64;
                self.period
                    .get((k % p) as usize)
                    .map_or(0, |&i| usize::from(i))
            }
            ModelSelection::Random => {
                let draw = splitmix64(self.seed ^ splitmix64(k));
                self.thresholds
                    .iter()
                    .position(|&t| draw <= t)
                    .unwrap_or(n - 1)
            }
        }
    }
}

/// Non-empty, distinct names, at most [`MAX_MODELS`].
fn check_names(models: &[ModelWeight]) -> Result<(), String> {
    if models.is_empty() {
        return Err("no model given".into());
    }
    if models.len() > MAX_MODELS {
        return Err(format!(
            "{} models; a mix holds at most {MAX_MODELS}",
            models.len()
        ));
    }
    for (i, m) in models.iter().enumerate() {
        if m.name.trim().is_empty() {
            return Err(format!("model {} of the list has no name", i + 1));
        }
        if models[..i].iter().any(|o| o.name == m.name) {
            return Err(format!("`{}` is named twice", m.name));
        }
    }
    Ok(())
}

/// The weights as integers: exact when every weight times 1, 10, ... 10,000 is a whole number
/// and their sum at most [`MAX_PERIOD`], else rounded to parts of [`WEIGHT_UNITS`] (largest
/// remainders, each at least 1); divided by their greatest common divisor.
fn integer_weights(weights: &[f64]) -> Vec<u64> {
    let exact = [1.0, 10.0, 100.0, 1_000.0, 10_000.0]
        .into_iter()
        .find_map(|scale| {
            let ints: Vec<u64> = weights.iter().map(|w| (w * scale).round() as u64).collect();
            let whole = weights
                .iter()
                .zip(&ints)
                .all(|(w, &i)| i > 0 && (w * scale - i as f64).abs() < 1e-6);
            let sum: u64 = ints.iter().sum();
            (whole && sum <= MAX_PERIOD).then_some(ints)
        });
    let ints = exact.unwrap_or_else(|| rounded(weights));
    let g = ints.iter().copied().fold(0, gcd).max(1);
    ints.into_iter().map(|i| i / g).collect()
}

/// Weights rounded to parts of [`WEIGHT_UNITS`] by largest remainders, each at least 1.
fn rounded(weights: &[f64]) -> Vec<u64> {
    let sum: f64 = weights.iter().sum();
    let exact: Vec<f64> = weights
        .iter()
        .map(|w| w / sum * WEIGHT_UNITS as f64)
        .collect();
    let mut ints: Vec<u64> = exact.iter().map(|e| (e.floor() as u64).max(1)).collect();
    let mut order: Vec<usize> = (0..exact.len()).collect();
    order.sort_by(|&a, &b| {
        let (ra, rb) = (exact[a] - exact[a].floor(), exact[b] - exact[b].floor());
        rb.total_cmp(&ra)
    });
    let mut left = WEIGHT_UNITS.saturating_sub(ints.iter().sum());
    for i in order.into_iter().cycle().take(exact.len() * 2) {
        if left == 0 {
            break;
        }
        ints[i] += 1;
        left -= 1;
    }
    ints
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

/// One period of the largest-deficit sequence of integer weights `u` (period `sum(u)`): each
/// step credits every model its weight and picks the most credited (the lowest index on a
/// tie), which then pays the period. Model `i` is picked exactly `u[i]` times per period, and
/// over any first `n` steps within 1 of `n u[i] / sum(u)` times.
fn largest_deficit(u: &[u64]) -> Vec<u16> {
    let total: u64 = u.iter().sum();
    let mut credit = vec![0i64; u.len()];
    let mut out = Vec::with_capacity(total as usize);
    for _ in 0..total {
        let mut best = 0;
        for (i, w) in u.iter().enumerate() {
            credit[i] += *w as i64;
            if credit[i] > credit[best] {
                best = i;
            }
        }
        credit[best] -= total as i64;
        out.push(best as u16);
    }
    out
}

/// The upper ends of each share's range of a uniform 64-bit draw.
fn thresholds(shares: &[f64]) -> Vec<u64> {
    let mut acc = 0.0;
    let mut out: Vec<u64> = shares
        .iter()
        .map(|s| {
            acc += s;
            if acc >= 1.0 {
                u64::MAX
            } else {
                (acc * u64::MAX as f64) as u64
            }
        })
        .collect();
    if let Some(last) = out.last_mut() {
        *last = u64::MAX;
    }
    out
}

/// splitmix64's finalizer: a well-mixed 64-bit value of `x`.
fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mix(text: &str, sel: Option<ModelSelection>) -> ModelMix {
        ModelMix::new(&parse_model_list(text).expect("list"), sel, 42).expect("mix")
    }

    fn counts(m: &ModelMix, n: u64) -> Vec<u64> {
        let mut c = vec![0; m.names().len()];
        for k in 0..n {
            c[m.choose(k)] += 1;
        }
        c
    }

    #[test]
    fn lists_parse_names_and_weights() {
        let l = parse_model_list("base:0.5, lora-a:0.3,lora-b:0.2").expect("list");
        assert_eq!(l.len(), 3);
        assert_eq!((l[1].name.as_str(), l[1].weight), ("lora-a", Some(0.3)));
        let l = parse_model_list("llama3:8b,m").expect("list");
        assert_eq!((l[0].name.as_str(), l[0].weight), ("llama3:8b", None));
        for bad in ["a,,b", ":0.5", "a:0", "a:-1", "a:inf", ""] {
            assert!(parse_model_list(bad).is_err(), "{bad}");
        }
        let l = |t: &str| parse_model_list(t).expect("list");
        assert!(ModelMix::new(&l("a:1,b"), None, 0).is_err());
        assert!(ModelMix::new(&l("a,a"), None, 0).is_err());
        assert!(ModelMix::new(&l("a:1,b:2"), Some(ModelSelection::RoundRobin), 0).is_err());
        assert_eq!(
            "round_robin".parse::<ModelSelection>(),
            Ok(ModelSelection::RoundRobin)
        );
        assert!("sticky".parse::<ModelSelection>().is_err());
    }

    #[test]
    fn round_robin_cycles_and_a_shard_keeps_the_whole_schedule() {
        let m = mix("a,b,c", None);
        assert_eq!(m.selection(), ModelSelection::RoundRobin);
        let seq: Vec<usize> = (0..7).map(|k| m.choose(k)).collect();
        assert_eq!(seq, [0, 1, 2, 0, 1, 2, 0]);
        // Shard 1 of 2 sends requests 1, 3, 5, ... of the whole schedule.
        let s = m.clone().for_shard(1, 2);
        let seq: Vec<usize> = (0..4).map(|k| s.choose(k)).collect();
        assert_eq!(seq, [1, 0, 2, 1]);
    }

    #[test]
    fn weighted_shares_are_exact_per_period_and_within_one_on_every_prefix() {
        for (text, period) in [
            ("base:0.5,lora-a:0.3,lora-b:0.2", 10u64),
            ("a:1,b:1,c:1", 3),
            ("a:38,b:50,c:1,d:1,e:38", 128),
            ("a:0.3333,b:0.6667", 10_000),
            ("a:1,b:0.0000001", 10_000),
        ] {
            let m = mix(text, None);
            assert_eq!(m.selection(), ModelSelection::Weighted);
            assert_eq!(m.period.len() as u64, period, "{text}");
            let mut c = vec![0u64; m.names().len()];
            for n in 1..=(3 * period).min(30_000) {
                c[m.choose(n - 1)] += 1;
                for (i, s) in m.shares().iter().enumerate() {
                    let exact = if period == 10_000 {
                        // Rounded to parts of 10,000: the rounded share is the exact one.
                        m.period.iter().filter(|&&x| usize::from(x) == i).count() as f64
                            / period as f64
                    } else {
                        *s
                    };
                    let d = (c[i] as f64 - n as f64 * exact).abs();
                    assert!(d <= 1.0 + 1e-9, "{text}: model {i} after {n}: {d}");
                }
            }
        }
        assert_eq!(
            counts(&mix("base:0.5,lora-a:0.3,lora-b:0.2", None), 1000),
            [500, 300, 200]
        );
    }

    #[test]
    fn random_draws_follow_the_weights_and_the_seed() {
        let m = mix("a:0.7,b:0.3", Some(ModelSelection::Random));
        let c = counts(&m, 100_000);
        // Binomial sd at n = 100,000, p = 0.3: 145; 5 sd.
        assert!((c[1] as f64 - 30_000.0).abs() < 725.0, "{c:?}");
        let again = mix("a:0.7,b:0.3", Some(ModelSelection::Random));
        assert!((0..1000).all(|k| m.choose(k) == again.choose(k)));
        let other = ModelMix::new(
            &parse_model_list("a:0.7,b:0.3").expect("list"),
            Some(ModelSelection::Random),
            7,
        )
        .expect("mix");
        assert!((0..1000).any(|k| m.choose(k) != other.choose(k)));
        let uniform = mix("a,b,c,d", Some(ModelSelection::Random));
        let c = counts(&uniform, 40_000);
        assert!(
            c.iter().all(|&x| (x as f64 - 10_000.0).abs() < 500.0),
            "{c:?}"
        );
    }
}
