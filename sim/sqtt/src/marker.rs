//! Code-object markers: the USERDATA_2 word protocol that tells the decoder where code objects
//! are loaded.
//!
//! The capture first writes [`ROC_MAGIC`] (`0x434F5200`, the bytes `'\0','R','O','C'`) and then
//! [`ROC_VERSION`] (524801 = `0x80201`). Then, for every code object loaded (or unloaded), one
//! marker: each field is two words, first the field header `4 | (type << 8)` ([`field_header`]),
//! then the field's 32-bit value, in this order:
//!
//! | field | type (simulator's choice) | value |
//! |---|---|---|
//! | `ADDR_LO` | 0 | load address, bits 0-31 |
//! | `ADDR_HI` | 1 | load address, bits 32-63 |
//! | `SIZE_LO` | 2 | load size, bits 0-31 |
//! | `SIZE_HI` | 3 | load size, bits 32-63 |
//! | `ID_LO` | 4 | code-object id, bits 0-31 (only if the id is at least 2^30) |
//! | `ID_HI` | 5 | code-object id, bits 32-63 (only if the id is at least 2^30) |
//! | `TAIL` | 6 | bit 0 `isUnload`, bit 1 `bFromStart`, bits 2-31 `legacy_id` (the id's low 30 bits) |
//!
//! The field order and word shapes are AMD's (aqlprofile's marker packet); AMD's numeric type
//! values are not public, so the simulator picks 0-6. [`MarkerDecoder`] is lenient the way a
//! decoder must be: words that are not field headers (other user data) are skipped and drop a
//! partial marker; a marker is complete at its `TAIL` once both address and both size halves have
//! been seen; the id is `ID_HI:ID_LO` if either was sent, otherwise `legacy_id`.

/// The first USERDATA_2 word of the marker protocol: `'\0ROC'`.
pub const ROC_MAGIC: u32 = 0x434F_5200;
/// The second USERDATA_2 word of the marker protocol (524801).
pub const ROC_VERSION: u32 = 0x0008_0201;
/// The low byte of every field header.
pub const FIELD_COMMAND: u32 = 4;

/// The field types (bits 8-31 of a field header); the simulator's numbering.
pub mod field {
    /// Load address, bits 0-31.
    pub const ADDR_LO: u32 = 0;
    /// Load address, bits 32-63.
    pub const ADDR_HI: u32 = 1;
    /// Load size, bits 0-31.
    pub const SIZE_LO: u32 = 2;
    /// Load size, bits 32-63.
    pub const SIZE_HI: u32 = 3;
    /// Id, bits 0-31 (ids of 2^30 and above only).
    pub const ID_LO: u32 = 4;
    /// Id, bits 32-63 (ids of 2^30 and above only).
    pub const ID_HI: u32 = 5;
    /// `{isUnload:1, bFromStart:1, legacy_id:30}`; completes the marker.
    pub const TAIL: u32 = 6;
}

/// Ids at or above this need the `ID_LO`/`ID_HI` fields (`legacy_id` has 30 bits).
pub const LEGACY_ID_LIMIT: u64 = 1 << 30;

/// The header word of a field of type `ty`.
pub const fn field_header(ty: u32) -> u32 {
    FIELD_COMMAND | ty << 8
}

/// One code-object load or unload.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct CodeObjectMarker {
    /// The code object's load id (the decoder's `pc_t.marker_id`).
    pub id: u64,
    /// Device address it is loaded at.
    pub addr: u64,
    /// Size of the loaded range in bytes.
    pub size: u64,
    /// It is being unloaded.
    pub unload: bool,
    /// It was already loaded when the trace started.
    pub from_start: bool,
}

impl CodeObjectMarker {
    /// The USERDATA_2 words of this marker, in order.
    pub fn words(&self) -> Vec<u32> {
        let mut fields = vec![
            (field::ADDR_LO, self.addr as u32),
            (field::ADDR_HI, (self.addr >> 32) as u32),
            (field::SIZE_LO, self.size as u32),
            (field::SIZE_HI, (self.size >> 32) as u32),
        ];
        if self.id >= LEGACY_ID_LIMIT {
            fields.push((field::ID_LO, self.id as u32));
            fields.push((field::ID_HI, (self.id >> 32) as u32));
        }
        let legacy = (self.id % LEGACY_ID_LIMIT) as u32;
        let tail = u32::from(self.unload) | u32::from(self.from_start) << 1 | legacy << 2;
        fields.push((field::TAIL, tail));
        fields
            .into_iter()
            .flat_map(|(ty, value)| [field_header(ty), value])
            .collect()
    }
}

/// Reassembles markers from the USERDATA_2 words of one stream, in order.
#[derive(Clone, Debug, Default)]
pub struct MarkerDecoder {
    /// [`ROC_MAGIC`] then [`ROC_VERSION`] have been seen.
    active: bool,
    /// The previous word was [`ROC_MAGIC`].
    after_magic: bool,
    /// The previous word was the header of this field.
    field: Option<u32>,
    /// Values of fields 0-5 seen since the last marker.
    values: [Option<u32>; 6],
}

impl MarkerDecoder {
    /// A decoder that has seen nothing yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether the protocol preamble has been seen.
    pub fn active(&self) -> bool {
        self.active
    }

    /// Feeds the next USERDATA_2 word; returns the marker it completes, if any.
    pub fn feed(&mut self, word: u32) -> Option<CodeObjectMarker> {
        if let Some(ty) = self.field.take() {
            if ty == field::TAIL {
                return self.complete(word);
            }
            self.values[ty as usize] = Some(word);
            return None;
        }
        let after_magic = std::mem::take(&mut self.after_magic);
        if word == ROC_MAGIC {
            self.after_magic = true;
            self.values = [None; 6];
            return None;
        }
        if after_magic && word == ROC_VERSION {
            self.active = true;
            return None;
        }
        if !self.active {
            return None;
        }
        let ty = word >> 8;
        if word & 0xFF == FIELD_COMMAND && ty <= field::TAIL {
            self.field = Some(ty);
        } else {
            self.values = [None; 6];
        }
        None
    }

    fn complete(&mut self, tail: u32) -> Option<CodeObjectMarker> {
        let v = std::mem::take(&mut self.values);
        let wide = |lo: Option<u32>, hi: Option<u32>| Some(u64::from(lo?) | u64::from(hi?) << 32);
        let addr = wide(v[field::ADDR_LO as usize], v[field::ADDR_HI as usize])?;
        let size = wide(v[field::SIZE_LO as usize], v[field::SIZE_HI as usize])?;
        let (id_lo, id_hi) = (v[field::ID_LO as usize], v[field::ID_HI as usize]);
        let id = if id_lo.is_some() || id_hi.is_some() {
            u64::from(id_lo.unwrap_or(0)) | u64::from(id_hi.unwrap_or(0)) << 32
        } else {
            u64::from(tail >> 2)
        };
        Some(CodeObjectMarker {
            id,
            addr,
            size,
            unload: tail & 1 != 0,
            from_start: tail & 2 != 0,
        })
    }
}
