//! A tiny deterministic PRNG: xoshiro256** seeded through SplitMix64, plus the few
//! distributions the counter model draws from.
//!
//! Everything here is pure integer and IEEE arithmetic, so a seed reproduces the same values on
//! every run of the same build.

/// One SplitMix64 step: advances `state` and returns the next output.
pub fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// xoshiro256** (Blackman and Vigna).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rng {
    s: [u64; 4],
}

impl Rng {
    /// A generator whose state is four SplitMix64 outputs of `seed`.
    pub fn new(seed: u64) -> Rng {
        let mut state = seed;
        let mut s = [0; 4];
        for word in &mut s {
            *word = splitmix64(&mut state);
        }
        if s == [0; 4] {
            // The one state xoshiro cannot leave; SplitMix64 never yields it, but be sure.
            s[0] = 1;
        }
        Rng { s }
    }

    /// An independent stream for (`seed`, `stream`): different streams of one seed do not
    /// share draws, so consuming one never shifts another.
    pub fn stream(seed: u64, stream: u64) -> Rng {
        let mut mix = stream ^ 0xD1B5_4A32_D192_ED03;
        Rng::new(seed ^ splitmix64(&mut mix))
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        let result = self.s[1].wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        let t = self.s[1] << 17;
        self.s[2] ^= self.s[0];
        self.s[3] ^= self.s[1];
        self.s[1] ^= self.s[2];
        self.s[0] ^= self.s[3];
        self.s[2] ^= t;
        self.s[3] = self.s[3].rotate_left(45);
        result
    }

    /// Uniform in [0, 1), 53 bits.
    pub fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1_u64 << 53) as f64)
    }

    /// `true` with probability `p` (clamped to [0, 1]).
    pub fn chance(&mut self, p: f64) -> bool {
        self.uniform() < p
    }

    /// Standard normal (Box–Muller, one value per two uniforms).
    pub fn normal(&mut self) -> f64 {
        let u1 = 1.0 - self.uniform(); // (0, 1]
        let u2 = self.uniform();
        (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
    }

    /// Log-normal with the given median and log-space sigma.
    pub fn lognormal(&mut self, median: f64, sigma: f64) -> f64 {
        median * (sigma * self.normal()).exp()
    }

    /// Poisson with mean `lambda`: Knuth's product method below 30, a rounded normal above.
    pub fn poisson(&mut self, lambda: f64) -> u64 {
        if lambda.is_nan() || lambda <= 0.0 {
            return 0;
        }
        if lambda < 30.0 {
            let limit = (-lambda).exp();
            let mut product = 1.0;
            let mut count = 0_u64;
            loop {
                product *= self.uniform();
                if product <= limit {
                    return count;
                }
                count += 1;
            }
        }
        let value = (lambda + lambda.sqrt() * self.normal()).round();
        if value <= 0.0 { 0 } else { value as u64 }
    }
}
