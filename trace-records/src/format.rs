//! Numbers as rocprofv3 prints them (C's `printf` formats), for every writer of its files.

/// C's `%.<digits>e`: the exponent signed and at least two digits (`1.50000000e+00`).
pub fn sci(x: f64, digits: usize) -> String {
    let s = format!("{x:.digits$e}");
    let (mantissa, exp) = s.split_once('e').expect("exponent format");
    let exp: i32 = exp.parse().expect("integer exponent");
    format!(
        "{mantissa}e{}{:02}",
        if exp < 0 { '-' } else { '+' },
        exp.abs()
    )
}

/// `Counter_Value` as rocprofv3 writes it: fixed with 6 decimals from 1 (`16384.000000`), below
/// 1 C's `%.8e` (`0.00000000e+00`); not-a-number and infinities as C prints them (`nan`, `inf`,
/// `-inf`).
pub fn fmt_counter_value(v: f64) -> String {
    if v.is_nan() {
        "nan".into()
    } else if v.is_infinite() {
        if v > 0.0 { "inf" } else { "-inf" }.into()
    } else if v >= 1.0 {
        format!("{v:.6}")
    } else {
        sci(v, 8)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counter_values_are_formatted_as_rocprofv3_does() {
        assert_eq!(fmt_counter_value(16384.0), "16384.000000");
        assert_eq!(fmt_counter_value(1.0), "1.000000");
        assert_eq!(fmt_counter_value(0.0), "0.00000000e+00");
        assert_eq!(fmt_counter_value(0.999_999_999), "9.99999999e-01");
        assert_eq!(fmt_counter_value(-2.5), "-2.50000000e+00");
        assert_eq!(fmt_counter_value(f64::NAN), "nan");
        assert_eq!(fmt_counter_value(f64::INFINITY), "inf");
        assert_eq!(fmt_counter_value(f64::NEG_INFINITY), "-inf");
    }

    #[test]
    fn small_and_large_exponents_have_two_digits_and_a_sign() {
        assert_eq!(sci(1.5, 8), "1.50000000e+00");
        assert_eq!(sci(0.000123, 3), "1.230e-04");
        assert_eq!(sci(1e120, 2), "1.00e+120");
    }
}
