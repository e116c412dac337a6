// A hand-written prototype of the PROPOSED decode schedule (bench/NOTES.md),
// to measure what the proposal buys before anyone changes the generator.
// Not part of the compiler: it is data for the proposal.
//
// Differences from the generated kernel (one key per lane, lane state in
// shared memory, scalar loads):
//  * one warp reads one whole key row: lane i loads dims [4i, 4i+4) as a
//    float4, so a row of D = 128 floats is one 512-byte coalesced request
//    (the generated kernel's lanes read rows 512 B apart, 4 bytes each);
//  * one workgroup serves all NREP query heads of a KV group, so each K/V row
//    is read from memory once for NREP heads (not NREP times);
//  * the running state (m, l, o) lives in registers (4 dims x NREP heads a
//    lane); shared memory only for the final cross-warp fold;
//  * UNROLL keys' K and V rows are loaded before the first use (loads in
//    flight), and the split count is sized so that the grid holds several
//    workgroups per SM.
// The numerics are the seed's online softmax (same combine weights).
//
// Build (build machine):  nvcc -arch=sm_90 -O3 -cubin -DUNROLL=8 -DWARPS=4 ...
// Launch: partials grid (splits, B*Hkv), block WARPS*32;
//         combine  grid (B*Hq),          block D.
// Args are device pointers only (Params sits in a device buffer).

#include <math_constants.h>

#ifndef D
#define D 128
#endif
#ifndef NREP
#define NREP 4
#endif
#ifndef WARPS
#define WARPS 4
#endif
#ifndef UNROLL
#define UNROLL 8
#endif
// Levers measured one at a time (bench/NOTES.md, run 3):
//  PIPE=1   register double buffer: the next UNROLL keys' K/V loads are issued
//           before the current ones are used (loads stay in flight);
//  HINT=1   ld.global.nc.L1::no_allocate.L2::256B (stream through L1, 256-byte
//           L2 prefetch);
//  FUSED=1  no second launch: the last workgroup of a KV group to finish (an
//           atomic ticket) combines the splits; the counters reset themselves,
//           so a captured graph replays.
#ifndef PIPE
#define PIPE 0
#endif
#ifndef HINT
#define HINT 0
#endif
#ifndef FUSED
#define FUSED 0
#endif

static_assert(D == 128, "the prototype maps 4 dims to each of 32 lanes");

struct Params {
  int B, Hkv, Lk, chunk, splits;
  float scale;
};

__device__ __forceinline__ float weight(float m, float M) {
  return m == -CUDART_INF_F ? 0.0f : expf(m - M);
}

__device__ __forceinline__ float4 load4(const float4* p) {
#if HINT
  float4 r;
  asm volatile("ld.global.nc.L1::no_allocate.L2::256B.v4.f32 {%0, %1, %2, %3}, [%4];"
               : "=f"(r.x), "=f"(r.y), "=f"(r.z), "=f"(r.w) : "l"(p));
  return r;
#else
  return __ldg(p);
#endif
}

// One split's (o, m, l) of one row, folded over the splits of that row.
__device__ __forceinline__ float fold_splits(const float* base, int splits, int d, bool coherent) {
  float M = -CUDART_INF_F;
  for (int i = 0; i < splits; ++i)
    M = fmaxf(M, coherent ? __ldcg(base + i * (D + 2) + D) : base[i * (D + 2) + D]);
  float num = 0.f, den = 0.f;
  for (int i = 0; i < splits; ++i) {
    const float* p = base + i * (D + 2);
    const float a = weight(coherent ? __ldcg(p + D) : p[D], M);
    num += (coherent ? __ldcg(p + d) : p[d]) * a;
    den += (coherent ? __ldcg(p + D + 1) : p[D + 1]) * a;
  }
  return num / den;
}

extern "C" __global__ void __launch_bounds__(WARPS * 32)
partials(const Params* __restrict__ P, const float* __restrict__ q, const float* __restrict__ k,
         const float* __restrict__ v, float* __restrict__ scratch
#if FUSED
         , float* __restrict__ out, unsigned* __restrict__ counters
#endif
         ) {
  const int Hkv = P->Hkv, Lk = P->Lk, chunk = P->chunk, splits = P->splits;
  const float scale = P->scale;
  const int split = blockIdx.x, bg = blockIdx.y;
  const int b = bg / Hkv, g = bg - b * Hkv;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int Hq = Hkv * NREP;

  float4 qr[NREP];
  float m[NREP], l[NREP];
  float4 o[NREP];
#pragma unroll
  for (int r = 0; r < NREP; ++r) {
    qr[r] = reinterpret_cast<const float4*>(q + (size_t)(b * Hq + g * NREP + r) * D)[lane];
    m[r] = -CUDART_INF_F;
    l[r] = 0.0f;
    o[r] = make_float4(0.f, 0.f, 0.f, 0.f);
  }
  const float4* kb = reinterpret_cast<const float4*>(k + (size_t)(b * Hkv + g) * Lk * D);
  const float4* vb = reinterpret_cast<const float4*>(v + (size_t)(b * Hkv + g) * Lk * D);
  const int begin = split * chunk;
  const int end = min(begin + chunk, Lk);

  auto step = [&](const float4 (&kk)[UNROLL], const float4 (&vv)[UNROLL], int t0) {
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
      if (t0 + u >= end) break;  // warp-uniform
      float s[NREP];
#pragma unroll
      for (int r = 0; r < NREP; ++r)
        s[r] = qr[r].x * kk[u].x + qr[r].y * kk[u].y + qr[r].z * kk[u].z + qr[r].w * kk[u].w;
#pragma unroll
      for (int off = 16; off > 0; off >>= 1)
#pragma unroll
        for (int r = 0; r < NREP; ++r) s[r] += __shfl_xor_sync(0xffffffffu, s[r], off);
#pragma unroll
      for (int r = 0; r < NREP; ++r) {
        const float sc = s[r] * scale;
        const float mn = fmaxf(m[r], sc);
        const float re = expf(m[r] - mn);  // 0 while this warp has seen nothing
        const float w = expf(sc - mn);
        l[r] = l[r] * re + w;
        o[r].x = o[r].x * re + w * vv[u].x;
        o[r].y = o[r].y * re + w * vv[u].y;
        o[r].z = o[r].z * re + w * vv[u].z;
        o[r].w = o[r].w * re + w * vv[u].w;
        m[r] = mn;
      }
    }
  };
  auto fetch = [&](float4 (&kk)[UNROLL], float4 (&vv)[UNROLL], int t0) {
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
      const int t = min(t0 + u, end - 1);  // clamp: always a valid row
      kk[u] = load4(kb + (size_t)t * (D / 4) + lane);
      vv[u] = load4(vb + (size_t)t * (D / 4) + lane);
    }
  };
  constexpr int STEP = WARPS * UNROLL;
#if PIPE
  int t0 = begin + warp * UNROLL;
  if (t0 < end) {
    float4 ka[UNROLL], va[UNROLL], kb2[UNROLL], vb2[UNROLL];
    fetch(ka, va, t0);
    for (;;) {
      if (t0 + STEP < end) fetch(kb2, vb2, t0 + STEP);
      step(ka, va, t0);
      t0 += STEP;
      if (t0 >= end) break;
      if (t0 + STEP < end) fetch(ka, va, t0 + STEP);
      step(kb2, vb2, t0);
      t0 += STEP;
      if (t0 >= end) break;
    }
  }
#else
  for (int t0 = begin + warp * UNROLL; t0 < end; t0 += STEP) {
    float4 kk[UNROLL], vv[UNROLL];
    fetch(kk, vv, t0);
    step(kk, vv, t0);
  }
#endif

  // Fold the warps' states, then publish this split's (o, m, l) per head.
  __shared__ float so[WARPS][NREP][D];
  __shared__ float sm[WARPS][NREP], sl[WARPS][NREP];
#pragma unroll
  for (int r = 0; r < NREP; ++r) {
    reinterpret_cast<float4*>(so[warp][r])[lane] = o[r];
    if (lane == 0) {
      sm[warp][r] = m[r];
      sl[warp][r] = l[r];
    }
  }
  __syncthreads();
  for (int idx = threadIdx.x; idx < NREP * D; idx += WARPS * 32) {
    const int r = idx / D, d = idx - r * D;
    float M = -CUDART_INF_F;
#pragma unroll
    for (int w = 0; w < WARPS; ++w) M = fmaxf(M, sm[w][r]);
    float num = 0.f, den = 0.f;
#pragma unroll
    for (int w = 0; w < WARPS; ++w) {
      const float a = weight(sm[w][r], M);
      num += so[w][r][d] * a;
      den += sl[w][r] * a;
    }
    const int row = b * Hq + g * NREP + r;
    float* dst = scratch + ((size_t)row * splits + split) * (D + 2);
    dst[d] = num;
    if (d == 0) {
      dst[D] = M;
      dst[D + 1] = den;
    }
  }
#if FUSED
  // The last workgroup of this KV group to finish combines its NREP rows.
  __shared__ unsigned last;
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) {
    last = atomicAdd(&counters[bg], 1u) == (unsigned)(splits - 1);
    if (last) counters[bg] = 0u;  // ready for the next launch / graph replay
  }
  __syncthreads();
  if (last) {
    __threadfence();
    for (int idx = threadIdx.x; idx < NREP * D; idx += WARPS * 32) {
      const int r = idx / D, d = idx - r * D;
      const int row = b * Hq + g * NREP + r;
      out[(size_t)row * D + d] = fold_splits(scratch + (size_t)row * splits * (D + 2), splits, d, true);
    }
  }
#endif
}

extern "C" __global__ void __launch_bounds__(D)
combine(const Params* __restrict__ P, const float* __restrict__ scratch, float* __restrict__ out) {
  const int splits = P->splits;
  const int row = blockIdx.x, d = threadIdx.x;
  out[(size_t)row * D + d] = fold_splits(scratch + (size_t)row * splits * (D + 2), splits, d, false);
}
