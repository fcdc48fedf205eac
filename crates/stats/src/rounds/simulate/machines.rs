//! The machines a user may run on (issue 48): kinds of contest unlike the development machine,
//! and the priors a simulated calibration of such a machine gives, estimated as the product
//! estimates them.

use super::*;

/// `rule` with the priors a calibration of `runs` A/A contests on the contest's machine gives, as
/// `pgtier calibrate` estimates them (`analysis::calibration`): each A/A contest the contest's
/// noise with true ratios 0 (its correlation and its offsets between server lives; none of its
/// warm-up, drift, position or revisit), the rule's fixed cut; the correlation pooled over every
/// twin's kept rounds ([`prior::pool`]), then each twin's interval at that correlation without an
/// offset, and the offset from the spread of each contest's lives
/// ([`prior::life_sd_from_twins`]) with its degrees of freedom.
pub fn simulated_calibration(rule: Rule, contest: Contest, runs: usize, rng: &mut Rng) -> Rule {
    let noise = match contest.series {
        Series::Ar1(rho) => Series::Ar1(rho),
        _ => Series::Iid,
    };
    let aa = Contest { series: noise, true_log_ratio: [0.0; 3], ..contest };
    let discard = rule.discard as usize;
    let mut kept: Vec<Vec<f64>> = Vec::with_capacity(runs * CONTENDERS);
    for _ in 0..runs {
        let mut g = Generator::new(aa);
        let mut x: [Vec<f64>; CONTENDERS] = std::array::from_fn(|_| vec![]);
        for _ in 0..aa.max_rounds {
            for (c, r) in g.next(rng).into_iter().enumerate() {
                x[c].push(r.log_ratio);
            }
        }
        kept.extend(x.into_iter().map(|x| x[discard.min(x.len())..].to_vec()));
    }
    let series: Vec<(f64, usize)> = kept.iter().map(|k| (lag1(k, &vec![1; k.len()]), k.len())).collect();
    let rho = prior::pool(&series);
    let rho = if rho.is_finite() { rho } else { TYPICAL.rho };
    let no_offset = Rule { rho_prior: rule.rho_prior.map(|_| rho), life_sd: None, life_df: None, ..rule };
    let contests: Vec<Vec<(f64, f64)>> = kept
        .chunks(CONTENDERS)
        .map(|twins| {
            twins
                .iter()
                .filter_map(|k| crate::rounds::estimate(&no_offset, k, &vec![1; k.len()]).map(|i| (i.mean, i.se)))
                .collect()
        })
        .collect();
    let (sd, df) = prior::life_sd_from_twins(&contests);
    Rule {
        rho_prior: rule.rho_prior.map(|_| rho),
        life_sd: rule.life_sd.map(|_| if sd.is_finite() { sd } else { 0.0 }),
        life_df: rule.life_sd.map(|_| df.max(1.0)),
        ..rule
    }
}

/// The machines a user may run on, unlike the development machine the committed priors come
/// from (issue 48): the main job's contest (its noise, a +5% change, a null cell and the
/// control) on machines whose offset between server lives (on a ratio) is 0, 5% or 10%, whose
/// rounds are AR(1) with rho 0.5, or whose first contender drifts 1% a round all contest long
/// (its truth the level it reaches in the budget's last round).
pub fn machine_kinds() -> Vec<(&'static str, Contest)> {
    let base = standard_contests()[0].1;
    let offset = |ratio_sd: f64| ratio_sd / std::f64::consts::SQRT_2;
    vec![
        ("no offset, no correlation", Contest { life_sd: 0.0, ..base }),
        ("offset 5%", Contest { life_sd: offset(0.05), ..base }),
        ("offset 10%", Contest { life_sd: offset(0.10), ..base }),
        ("AR(1) 0.5, offset 3.35%", Contest { series: Series::Ar1(0.5), ..base }),
        ("AR(1) 0.5, no offset", Contest { series: Series::Ar1(0.5), life_sd: 0.0, ..base }),
        (
            "drift 1% a round, sustained",
            Contest { series: Series::Drift { per_round: 0.01, settles: MAIN_JOB_ROUNDS }, ..base },
        ),
    ]
}
