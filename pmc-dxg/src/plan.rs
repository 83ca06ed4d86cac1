//! Pass planning: the base counters a request needs, grouped into passes that fit each
//! block's counter slots (SQ 8, GRBM 2, as aqlprofile enforces) and, optionally, a frame: the
//! largest PM4 buffer one submission may carry.
//!
//! aqlprofile refuses a 9th SQ or a 3rd GRBM event in one pass. On WSL2 the DXG path also
//! bounds what one vendor packet may carry (libhsakmt's per-queue PM4 frame; AMD measured that
//! four counters fit): a pass whose read buffer is larger fails there even though its slots
//! fit. [`plan`] therefore takes the frame as a parameter (`None`: slots only).
//!
//! Planning is deterministic: the same request gives the same passes. With
//! [`Packing::Split`] the counters are spread over the fewest passes that satisfy every
//! limit, earlier passes filled first, each pass keeping the request order.

use crate::pm4::{self, GRBM_SLOTS, Geometry, SQ_SLOTS};
use crate::{BaseEvent, Block, Error, Topology};

type Result<T> = std::result::Result<T, Error>;

/// The frame this build assumes for the DXG path: 512 dwords per PM4 submission. The real
/// libhsakmt's size is not published; this is the frame the simulated thunk enforces, and it
/// holds AMD's measured four-counter pass. On the Radeon 890M it admits at most 6 SQ + 2 GRBM
/// counters per pass (a 505-dword read buffer).
pub const DXG_FRAME_DWORDS: usize = 512;

/// What to do with a set that does not fit one pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Packing {
    /// Refuse it, naming the counters that conflict.
    OnePass,
    /// Split it into the fewest passes.
    Split,
}

/// The base counters of one pass, in request order (ready for [`pm4::build_pass`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pass {
    /// Name and event of each counter.
    pub counters: Vec<(String, BaseEvent)>,
}

/// Groups `counters` (the distinct base counters of a request; a repeated name is kept once,
/// at its first place) into passes for `topology`. Every pass fits the slots, and with
/// `frame_dwords` each of its buffers has at most that many dwords. Errors: a target other
/// than gfx11, a block other than SQ/GRBM, an event id too large for its block, a counter
/// that alone overflows the frame; with [`Packing::OnePass`], a set needing more than one
/// pass (`TooManyCounters` for the slots, `FrameOverflow` for the frame). No counters, no
/// passes.
pub fn plan(
    topology: &Topology,
    counters: &[(String, BaseEvent)],
    packing: Packing,
    frame_dwords: Option<usize>,
) -> Result<Vec<Pass>> {
    let geometry = Geometry::of(topology)?;
    // Distinct by name, request order kept; blocks and ids checked.
    let mut distinct: Vec<&(String, BaseEvent)> = Vec::with_capacity(counters.len());
    for counter in counters {
        pm4::check_event(&counter.0, &counter.1)?;
        if !distinct.iter().any(|kept| kept.0 == counter.0) {
            distinct.push(counter);
        }
    }
    let sq: Vec<usize> = (0..distinct.len())
        .filter(|&i| distinct[i].1.block == Block::Sq)
        .collect();
    let grbm: Vec<usize> = (0..distinct.len())
        .filter(|&i| distinct[i].1.block == Block::Grbm)
        .collect();
    if distinct.is_empty() {
        return Ok(Vec::new());
    }
    let names = |indices: &[usize]| -> Vec<String> {
        indices.iter().map(|&i| distinct[i].0.clone()).collect()
    };
    let fits =
        |s: usize, g: usize| frame_dwords.is_none_or(|f| geometry.dwords(s, g).largest() <= f);
    let frame = frame_dwords.unwrap_or(usize::MAX);

    if packing == Packing::OnePass {
        for (indices, block, slots) in
            [(&sq, Block::Sq, SQ_SLOTS), (&grbm, Block::Grbm, GRBM_SLOTS)]
        {
            if indices.len() > slots {
                return Err(Error::TooManyCounters {
                    block: block.name().to_owned(),
                    slots,
                    counters: names(indices),
                });
            }
        }
        if !fits(sq.len(), grbm.len()) {
            return Err(Error::FrameOverflow {
                dwords: geometry.dwords(sq.len(), grbm.len()).largest(),
                frame,
                counters: distinct.iter().map(|c| c.0.clone()).collect(),
            });
        }
        return Ok(vec![Pass {
            counters: distinct.into_iter().cloned().collect(),
        }]);
    }

    // SQ counters a pass holds next to g GRBM counters (None: not even the GRBM ones fit).
    let capacity: [Option<usize>; GRBM_SLOTS + 1] = std::array::from_fn(|g| {
        fits(0, g).then(|| (0..=SQ_SLOTS).rev().find(|&s| fits(s, g)).unwrap_or(0))
    });
    if let Some(&first) = sq.first()
        && capacity[0].unwrap_or(0) == 0
    {
        return Err(Error::FrameOverflow {
            dwords: geometry.dwords(1, 0).largest(),
            frame,
            counters: vec![distinct[first].0.clone()],
        });
    }
    if let Some(&first) = grbm.first()
        && capacity[1].is_none()
    {
        return Err(Error::FrameOverflow {
            dwords: geometry.dwords(0, 1).largest(),
            frame,
            counters: vec![distinct[first].0.clone()],
        });
    }

    // GRBM counters per pass, for the fewest passes that hold everything.
    let grbm_per_pass = fewest(sq.len(), grbm.len(), &capacity);
    let mut passes: Vec<Vec<usize>> = vec![Vec::new(); grbm_per_pass.len()];
    let mut next_grbm = grbm.iter();
    let mut next_sq = sq.iter().peekable();
    for (pass, &g) in passes.iter_mut().zip(&grbm_per_pass) {
        pass.extend(next_grbm.by_ref().take(g));
        let held = pass.len();
        let room = capacity[held].unwrap_or(0);
        pass.extend(next_sq.by_ref().take(room));
    }
    debug_assert!(next_sq.peek().is_none() && next_grbm.next().is_none());
    Ok(passes
        .into_iter()
        .filter(|pass| !pass.is_empty())
        .map(|mut pass| {
            pass.sort_unstable();
            Pass {
                counters: pass.into_iter().map(|i| distinct[i].clone()).collect(),
            }
        })
        .collect())
}

/// How many GRBM counters each pass of the smallest set of passes holding `sq` SQ and `grbm`
/// GRBM counters gets, passes with more GRBM counters first. `capacity[g]` is how many SQ
/// counters a pass with g GRBM counters holds (`None`: such a pass does not fit); the caller
/// has checked `capacity[0] >= 1` when `sq > 0` and `capacity[1]` is `Some` when `grbm > 0`.
fn fewest(sq: usize, grbm: usize, capacity: &[Option<usize>; GRBM_SLOTS + 1]) -> Vec<usize> {
    let room = |g: usize| capacity[g].unwrap_or(0);
    let lower = sq.div_ceil(SQ_SLOTS).max(grbm.div_ceil(GRBM_SLOTS)).max(1);
    // Every counter alone in its pass always works, so the search ends by sq + grbm passes.
    for passes in lower..=sq + grbm {
        // `two` passes may hold 2 GRBM counters, `one` pass 1, the rest none. A pass given
        // fewer GRBM counters than it may hold only gains SQ room.
        for two in (0..=passes).rev() {
            for one in (0..=passes - two).rev() {
                let none = passes - two - one;
                if 2 * two + one < grbm
                    || (two > 0 && capacity[2].is_none())
                    || (one > 0 && capacity[1].is_none())
                    || two * room(2) + one * room(1) + none * room(0) < sq
                {
                    continue;
                }
                let mut left = grbm;
                let limits = std::iter::repeat_n(2, two)
                    .chain(std::iter::repeat_n(1, one))
                    .chain(std::iter::repeat_n(0, none));
                return limits
                    .map(|limit: usize| {
                        let given = limit.min(left);
                        left -= given;
                        given
                    })
                    .collect();
            }
        }
    }
    let mut alone = vec![1; grbm];
    alone.resize(grbm + sq, 0);
    alone
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fewest_uses_the_lower_bound_without_a_frame() {
        let open = [Some(8), Some(8), Some(8)];
        assert_eq!(fewest(8, 2, &open), [2]);
        assert_eq!(fewest(9, 0, &open), [0, 0]);
        assert_eq!(fewest(0, 5, &open), [2, 2, 1]);
        assert_eq!(fewest(1, 3, &open), [2, 1]);
        assert_eq!(fewest(16, 4, &open), [2, 2]);
    }

    #[test]
    fn fewest_trades_grbm_for_sq_room_under_a_frame() {
        // The 890M under 512 dwords: 6 SQ beside 0, 1 or 2 GRBM.
        let frame = [Some(6), Some(6), Some(6)];
        assert_eq!(fewest(8, 2, &frame), [2, 0]);
        assert_eq!(fewest(12, 2, &frame), [2, 0]);
        assert_eq!(fewest(13, 0, &frame), [0, 0, 0]);
        // A frame where each GRBM counter costs an SQ slot: 2 G + 1 S, then 3 S.
        let tight = [Some(3), Some(2), Some(1)];
        assert_eq!(fewest(3, 2, &tight), [2, 0]);
        assert_eq!(fewest(4, 2, &tight), [2, 0]);
        // Two passes hold at most 4 SQ beside 2 GRBM ([2, 0]: 1 + 3, [1, 1]: 2 + 2).
        assert_eq!(fewest(5, 2, &tight), [2, 0, 0]);
        // A frame that holds no GRBM pair.
        let no_pair = [Some(4), Some(2), None];
        assert_eq!(fewest(0, 2, &no_pair), [1, 1]);
        assert_eq!(fewest(4, 2, &no_pair), [1, 1]);
        assert_eq!(fewest(5, 2, &no_pair), [1, 1, 0]);
    }
}
