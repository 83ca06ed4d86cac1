//! dxcore-sys
