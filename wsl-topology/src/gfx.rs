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
        Self {
            major: v / 10_000,
            minor: (v / 100) % 100,
            stepping: v % 100,
        }
        .checked()
    }

    /// `self` if its name parses back to it: a non-zero major, a minor of one decimal digit and a
    /// stepping of one hex digit.
    fn checked(self) -> Option<Self> {
        (self.major != 0 && self.minor < 10 && self.stepping < 16).then_some(self)
    }
}

impl fmt::Display for GfxTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "gfx{}{}{:x}", self.major, self.minor, self.stepping)
    }
}

/// The engine id that names a node's target: `OverrideEngineId` when its major is set (that is
/// how the thunk passes on `HSA_OVERRIDE_GFX_VERSION`), else `EngineId`.
fn node_target(engine: HSA_ENGINE_ID, override_engine: HSA_ENGINE_ID) -> GfxTarget {
    let id = if override_engine.major() != 0 {
        override_engine
    } else {
        engine
    };
    GfxTarget {
        major: id.major(),
        minor: id.minor(),
        stepping: id.stepping(),
    }
}

/// The gfx name a node reports: `OverrideEngineId` when its major is set (that is how the thunk
/// passes on `HSA_OVERRIDE_GFX_VERSION`), else `EngineId`; empty when the major is 0. The
/// parts are written as they are: a minor of 10 or more, or a stepping of 16 or more, gives a
/// name that does not parse back to them ([`resolve_gfx_target`] refuses those).
pub fn node_gfx_name(engine: HSA_ENGINE_ID, override_engine: HSA_ENGINE_ID) -> String {
    let target = node_target(engine, override_engine);
    if target.major == 0 {
        return String::new();
    }
    target.to_string()
}

/// Applies `ROCPROFILER_FORCE_GFX` (already validated into `forced`) over the node's own
/// target. `None` when the node's engine id names no target: a major of 0, or a minor or
/// stepping too large for its digit in the name (as [`GfxTarget::from_version`] checks).
pub fn resolve_gfx_target(
    forced: Option<GfxTarget>,
    engine: HSA_ENGINE_ID,
    override_engine: HSA_ENGINE_ID,
) -> Option<GfxTarget> {
    forced.or_else(|| node_target(engine, override_engine).checked())
}

/// The name of [`resolve_gfx_target`]'s target; empty when there is none.
pub fn resolve_gfx_name(
    forced: Option<GfxTarget>,
    engine: HSA_ENGINE_ID,
    override_engine: HSA_ENGINE_ID,
) -> String {
    resolve_gfx_target(forced, engine, override_engine).map_or_else(String::new, |t| t.to_string())
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

    #[test]
    fn engine_ids_without_a_name_that_parses_back_are_refused() {
        let none = HSA_ENGINE_ID::default();
        // 11.10.5 would be written "gfx11105", which parses back as 111.0.5.
        assert_eq!(
            resolve_gfx_target(None, HSA_ENGINE_ID::new(11, 10, 5, 0), none),
            None
        );
        assert_eq!(
            resolve_gfx_target(None, HSA_ENGINE_ID::new(11, 5, 16, 0), none),
            None
        );
        assert_eq!(
            resolve_gfx_target(None, none, HSA_ENGINE_ID::new(11, 10, 5, 0)),
            None
        );
        assert_eq!(
            resolve_gfx_target(None, HSA_ENGINE_ID::new(11, 5, 0, 0), none),
            GfxTarget::parse("gfx1150")
        );
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
