//! Property tests: for any valid synthetic configuration, every prompt re-encodes to exactly
//! its count, within the distribution's bounds, and the stream is a function of the seed.

use bench_loader::{DataSpec, Loader};
use bench_tokenizer::Tokenizer;
use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn synthetic_counts_are_exact(
        mean in 1i64..600,
        stdev in 0.0f64..300.0,
        lo in 1i64..50,
        span in 0i64..700,
        prefix in 0i64..40,
        out in 1i64..300,
        seed in any::<u64>(),
        verified in any::<bool>(),
    ) {
        let arg = format!(
            "prompt_tokens={mean},prompt_tokens_stdev={stdev},prompt_tokens_min={lo},prompt_tokens_max={},output_tokens={out},prefix_tokens={prefix},seed={seed}",
            lo + span
        );
        let tk = Tokenizer::builtin();
        let spec = DataSpec::parse(&arg, None).expect("valid");
        let make = |spec: DataSpec| if verified {
            Loader::new_verified(spec, tk.clone())
        } else {
            Loader::new(spec, tk.clone())
        }
        .expect("loader");
        let got: Vec<_> = make(spec.clone()).take(6).collect();
        for s in &got {
            prop_assert_eq!(tk.count(&s.prompt), s.prompt_tokens as usize);
            let body = s.prompt_tokens as i64 - prefix;
            prop_assert!(body >= lo && body <= lo + span, "{} not in [{}, {}]", body, lo, lo + span);
            prop_assert!(s.output_tokens.is_some_and(|o| o >= 1));
        }
        let again: Vec<_> = make(spec).take(6).collect();
        prop_assert_eq!(got, again);
    }

    #[test]
    fn parse_never_panics(s in "[a-z_=,0-9.-]{0,60}") {
        let _ = DataSpec::parse(&s, None);
    }
}
