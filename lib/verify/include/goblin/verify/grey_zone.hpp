// What a heavy node's grey-zone matrix (Freivalds cannot decide it) gets in a cheap audit: the
// node recomputes the node with the reference and compares bit for bit (a replica of canonical
// kernels), or every element is compared with its own bound by checkMatmulTileExactly (a
// replica whose matmuls and convolutions ran through a BLAS: GraphVerification::Freivalds, whose
// bits are not the reference's).
#pragma once

namespace goblin::verify {

enum class GreyZone { RecomputeBitwise, CheckExactly };

} // namespace goblin::verify
