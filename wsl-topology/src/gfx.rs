//! gfx target names: `gfx` + decimal major + decimal minor + lowercase-hex stepping.

use rocdxg_sys::HSA_ENGINE_ID;
use std::fmt;

/// A parsed gfx target such as `gfx1150` (11.5.0) or `gfx90a` (9.0.10).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
pub struct GfxTarget {
    /// Major version.
    pub major: u32,
    /// Minor version (one digit in the name).
    pub minor: u32,
    /// Stepping (one lowercase-hex digit in the name).
    pub stepping: u32,
}

impl GfxTarget {
    /// Parses `gfx` followed by at least three characters: the last is the stepping (a decimal
    /// or lowercase-hex digit), the one before it the minor (decimal), the rest the decimal
    /// major. Anything else is `None`.
    pub fn parse(name: &str) -> Option<Self> {
        let digits = name.strip_prefix("gfx")?.as_bytes();
        if digits.len() < 3 {
            return None;
        }
        let (major, rest) = digits.split_at(digits.len() - 2);
        if !major.iter().all(u8::is_ascii_digit) || major.len() > 6 {
            return None;
        }
        let major = std::str::from_utf8(major).ok()?.parse().ok()?;
        let minor = match rest[0] {
            c @ b'0'..=b'9' => u32::from(c - b'0'),
            _ => return None,
        };
        let stepping = match rest[1] {
            c @ b'0'..=b'9' => u32::from(c - b'0'),
            c @ b'a'..=b'f' => u32::from(c - b'a') + 10,
            _ => return None,
        };
        Some(Self {
            major,
            minor,
            stepping,
        })
    }

    /// The numeric form `major·10000 + minor·100 + stepping` (e.g. 110500).
    pub fn version(self) -> u32 {
        self.major * 10_000 + self.minor * 100 + self.stepping
    }

    /// From the numeric form used by KFD sysfs (`gfx_target_version`).
    pub fn from_version(v: u32) -> Option<Self> {
        let t = Self {
            major: v / 10_000,
            minor: (v / 100) % 100,
            stepping: v % 100,
        };
        (t.major != 0 && t.minor < 10 && t.stepping < 16).then_some(t)
    }
}

impl fmt::Display for GfxTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "gfx{}{}{:x}", self.major, self.minor, self.stepping)
    }
}

/// The gfx name a node reports: `OverrideEngineId` when its major is set (that is how the thunk
/// passes on `HSA_OVERRIDE_GFX_VERSION`), else `EngineId`; empty when the major is 0.
pub fn node_gfx_name(engine: HSA_ENGINE_ID, override_engine: HSA_ENGINE_ID) -> String {
    let id = if override_engine.major() != 0 {
        override_engine
    } else {
        engine
    };
    if id.major() == 0 {
        return String::new();
    }
    GfxTarget {
        major: id.major(),
        minor: id.minor(),
        stepping: id.stepping(),
    }
    .to_string()
}

/// Applies `ROCPROFILER_FORCE_GFX` (already validated into `forced`) over the node's own name.
pub fn resolve_gfx_name(
    forced: Option<GfxTarget>,
    engine: HSA_ENGINE_ID,
    override_engine: HSA_ENGINE_ID,
) -> String {
    match forced {
        Some(t) => t.to_string(),
        None => node_gfx_name(engine, override_engine),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn parses_decimal_and_hex_steppings() {
        assert_eq!(GfxTarget::parse("gfx1150").unwrap().version(), 110500);
        assert_eq!(GfxTarget::parse("gfx90a").unwrap().version(), 90010);
        assert_eq!(GfxTarget::parse("gfx942").unwrap().to_string(), "gfx942");
        for bad in [
            "",
            "gfx",
            "gfx11",
            "not-a-target",
            "gfx90A",
            "gfx9x0",
            "GFX1150",
            "gfx1150 ",
        ] {
            assert_eq!(GfxTarget::parse(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn precedence_force_then_override_then_engine() {
        let engine = HSA_ENGINE_ID::new(11, 5, 0, 42);
        let none = HSA_ENGINE_ID::default();
        assert_eq!(resolve_gfx_name(None, engine, none), "gfx1150");
        assert_eq!(
            resolve_gfx_name(None, none, HSA_ENGINE_ID::new(11, 0, 0, 0)),
            "gfx1100"
        );
        assert_eq!(
            resolve_gfx_name(GfxTarget::parse("gfx942"), engine, none),
            "gfx942"
        );
        assert_eq!(resolve_gfx_name(None, none, none), "");
    }

    proptest! {
        #[test]
        fn format_then_parse_round_trips(major in 1u32..100, minor in 0u32..10, stepping in 0u32..16) {
            let t = GfxTarget { major, minor, stepping };
            prop_assert_eq!(GfxTarget::parse(&t.to_string()), Some(t));
            prop_assert_eq!(GfxTarget::from_version(t.version()), Some(t));
        }

        #[test]
        fn parse_never_panics(s in "\\PC{0,12}") {
            let _ = GfxTarget::parse(&s);
        }
    }
}
