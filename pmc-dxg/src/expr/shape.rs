//! Dimensions and the shapes of per-instance values (see the [module docs](super) for the
//! storage order).

use std::fmt;

/// A dimension of per-instance counter values, with rocprofiler-sdk's numbering (the 6-bit
/// field `d` of a counter instance id sits at bits `[(d-1)·6+5 : (d-1)·6]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Dim {
    /// Accelerated compute die.
    Xcc = 1,
    /// Active interposer die.
    Aid = 2,
    /// Shader engine.
    ShaderEngine = 3,
    /// The agent.
    Agent = 4,
    /// Shader array within a shader engine.
    ShaderArray = 5,
    /// Workgroup processor within a shader array.
    Wgp = 6,
    /// Instance of the counting block.
    Instance = 7,
}

impl Dim {
    /// Every dimension, by id.
    pub const ALL: [Dim; 7] = [
        Dim::Xcc,
        Dim::Aid,
        Dim::ShaderEngine,
        Dim::Agent,
        Dim::ShaderArray,
        Dim::Wgp,
        Dim::Instance,
    ];

    /// The order in which shapes keep (and rocprofv3-avail lists) dimensions: the block's own
    /// instances first, then the topology around them, innermost first.
    pub const LISTING_ORDER: [Dim; 7] = [
        Dim::Instance,
        Dim::Wgp,
        Dim::ShaderArray,
        Dim::ShaderEngine,
        Dim::Aid,
        Dim::Xcc,
        Dim::Agent,
    ];

    /// rocprofiler-sdk's id (1-7).
    pub fn id(self) -> u8 {
        self as u8
    }

    /// The name used in expressions and listings (`DIMENSION_SHADER_ENGINE`).
    pub fn name(self) -> &'static str {
        match self {
            Dim::Xcc => "DIMENSION_XCC",
            Dim::Aid => "DIMENSION_AID",
            Dim::ShaderEngine => "DIMENSION_SHADER_ENGINE",
            Dim::Agent => "DIMENSION_AGENT",
            Dim::ShaderArray => "DIMENSION_SHADER_ARRAY",
            Dim::Wgp => "DIMENSION_WGP",
            Dim::Instance => "DIMENSION_INSTANCE",
        }
    }

    /// From its name (`DIMENSION_NONE` is not a dimension one can reduce or select over).
    pub fn from_name(name: &str) -> Option<Dim> {
        Dim::ALL.into_iter().find(|d| d.name() == name)
    }

    fn listing_rank(self) -> usize {
        Dim::LISTING_ORDER
            .iter()
            .position(|&d| d == self)
            .unwrap_or(usize::MAX)
    }
}

impl fmt::Display for Dim {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The dimensions of a vector of values and their extents, in [`Dim::LISTING_ORDER`]; the
/// first dimension varies fastest in the flat vector.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Shape {
    dims: Vec<(Dim, u32)>,
}

impl Shape {
    /// A shape from dimensions in any order. A repeated dimension keeps its last extent; an
    /// extent of 0 counts as 1; no dimensions at all is [`Shape::single`].
    pub fn new(dims: impl IntoIterator<Item = (Dim, u32)>) -> Shape {
        let mut out: Vec<(Dim, u32)> = Vec::new();
        for (d, e) in dims {
            let e = e.max(1);
            match out.iter_mut().find(|(od, _)| *od == d) {
                Some(slot) => slot.1 = e,
                None => out.push((d, e)),
            }
        }
        if out.is_empty() {
            return Shape::single();
        }
        out.sort_by_key(|(d, _)| d.listing_rank());
        Shape { dims: out }
    }

    /// One value: `DIMENSION_INSTANCE` with extent 1 (what numbers, constants and full
    /// reductions have).
    pub fn single() -> Shape {
        Shape {
            dims: vec![(Dim::Instance, 1)],
        }
    }

    /// The dimensions and their extents.
    pub fn dims(&self) -> &[(Dim, u32)] {
        &self.dims
    }

    /// The extent of `dim`, if the shape has it.
    pub fn extent(&self, dim: Dim) -> Option<u32> {
        self.dims.iter().find(|(d, _)| *d == dim).map(|&(_, e)| e)
    }

    /// A shape from dimensions already in [`Dim::LISTING_ORDER`], each once, extents at
    /// least 1 (a shape's own dimensions, some left out); none is [`Shape::single`].
    pub(super) fn from_ordered(dims: Vec<(Dim, u32)>) -> Shape {
        debug_assert!(
            dims.windows(2)
                .all(|w| w[0].0.listing_rank() < w[1].0.listing_rank())
        );
        debug_assert!(dims.iter().all(|&(_, e)| e >= 1));
        if dims.is_empty() {
            Shape::single()
        } else {
            Shape { dims }
        }
    }

    /// Number of values.
    pub fn len(&self) -> usize {
        self.dims
            .iter()
            .fold(1usize, |n, &(_, e)| n.saturating_mul(e as usize))
    }

    /// Whether the shape holds no value (never: every extent is at least 1).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The coordinate of the flat element `index` along each dimension.
    pub(super) fn coords(&self, mut index: usize, out: &mut Vec<u32>) {
        out.clear();
        for &(_, e) in &self.dims {
            out.push((index % e as usize) as u32);
            index /= e as usize;
        }
    }
}

/// As rocprofv3-avail prints dimensions: `DIMENSION_INSTANCE[0:0] DIMENSION_WGP[0:3]`.
impl fmt::Display for Shape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, (d, e)) in self.dims.iter().enumerate() {
            if i > 0 {
                f.write_str(" ")?;
            }
            write!(f, "{}[0:{}]", d.name(), e - 1)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn coordinates_run_first_dimension_fastest() {
        let s = Shape::new([(Dim::ShaderEngine, 2), (Dim::Wgp, 3)]);
        assert_eq!(s.dims(), [(Dim::Wgp, 3), (Dim::ShaderEngine, 2)]);
        let mut c = Vec::new();
        let all: Vec<Vec<u32>> = (0..s.len())
            .map(|i| {
                s.coords(i, &mut c);
                c.clone()
            })
            .collect();
        assert_eq!(
            all,
            [[0, 0], [1, 0], [2, 0], [0, 1], [1, 1], [2, 1]].map(|v| v.to_vec())
        );
    }

    #[test]
    fn an_ordered_shape_without_dimensions_is_a_single_value() {
        assert_eq!(Shape::from_ordered(Vec::new()), Shape::single());
        let dims = vec![(Dim::Instance, 1), (Dim::Agent, 2)];
        assert_eq!(Shape::from_ordered(dims.clone()), Shape::new(dims));
    }
}
