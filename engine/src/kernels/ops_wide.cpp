// AVX-512 bodies of the activations and softmax: ops.cpp's exp8 / act8 at 16 lanes, same operations.
#include "ops_wide.hpp"

#include <limits>

namespace ordo::detail {

#if defined(ORDO_SIMD) && defined(__x86_64__)
ORDO_AVX512_WARNINGS_OFF
namespace {

#define ORDO_WIDE __attribute__((target("avx2,fma,f16c,avx512f,avx512dq")))

// exp8 (ops.cpp) in 16 lanes: the same Cephes steps in the same order.
ORDO_WIDE inline __m512 exp16(__m512 x) {
  const __m512 lo = _mm512_set1_ps(-87.33654475f), hi = _mm512_set1_ps(88.72283905f);
  const __mmask16 under = _mm512_cmp_ps_mask(x, lo, _CMP_LT_OQ);
  const __mmask16 over = _mm512_cmp_ps_mask(x, hi, _CMP_GT_OQ);
  x = _mm512_max_ps(lo, _mm512_min_ps(hi, x));  // operand order keeps NaN
  const __m512 fx = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                         _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(fx, _mm512_set1_ps(0.693359375f), x);
  r = _mm512_fnmadd_ps(fx, _mm512_set1_ps(-2.12194440e-4f), r);
  __m512 p = _mm512_set1_ps(1.9875691500e-4f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
  p = _mm512_fmadd_ps(p, _mm512_mul_ps(r, r), r);
  p = _mm512_add_ps(p, _mm512_set1_ps(1.0f));
  const __m512i n = _mm512_cvtps_epi32(fx);
  const __m512i n1 = _mm512_srai_epi32(n, 1), n2 = _mm512_sub_epi32(n, n1);
  const __m512i bias = _mm512_set1_epi32(127);
  const __m512 s1 = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_add_epi32(n1, bias), 23));
  const __m512 s2 = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_add_epi32(n2, bias), 23));
  p = _mm512_mul_ps(_mm512_mul_ps(p, s1), s2);
  p = _mm512_maskz_mov_ps(static_cast<__mmask16>(~under), p);
  return _mm512_mask_blend_ps(over, p, _mm512_set1_ps(std::numeric_limits<float>::infinity()));
}

// act8 (ops.cpp) in 16 lanes.
ORDO_WIDE inline __m512 act16(Activation a, __m512 v) {
  const __m512 one = _mm512_set1_ps(1.0f);
  switch (a) {
    case Activation::SiLU: return _mm512_div_ps(v, _mm512_add_ps(one, exp16(_mm512_sub_ps(_mm512_setzero_ps(), v))));
    case Activation::GeluTanh: {
      const __m512 v3 = _mm512_mul_ps(_mm512_mul_ps(v, v), v);
      const __m512 u =
          _mm512_mul_ps(_mm512_set1_ps(0.79788456080286535588f), _mm512_fmadd_ps(_mm512_set1_ps(0.044715f), v3, v));
      return _mm512_div_ps(v, _mm512_add_ps(one, exp16(_mm512_mul_ps(_mm512_set1_ps(-2.0f), u))));
    }
    case Activation::ReLU: return _mm512_max_ps(v, _mm512_setzero_ps());
    case Activation::GeluErf: break;
  }
  return v;
}

}  // namespace

ORDO_WIDE int64_t act_span_wide(Activation a, float* x, const float* up, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    __m512 v = act16(a, _mm512_loadu_ps(x + i));
    if (up) v = _mm512_mul_ps(v, _mm512_loadu_ps(up + i));
    _mm512_storeu_ps(x + i, v);
  }
  return i;
}

ORDO_WIDE int64_t softmax_exp_wide(float* x, int64_t n, float mx, __m256* vs) {
  const __m512 vm = _mm512_set1_ps(mx);
  __m256 s = *vs;
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512 e = exp16(_mm512_sub_ps(_mm512_loadu_ps(x + i), vm));
    _mm512_storeu_ps(x + i, e);
    s = _mm256_add_ps(s, _mm512_castps512_ps256(e));
    s = _mm256_add_ps(s, _mm512_extractf32x8_ps(e, 1));
  }
  *vs = s;
  return i;
}
ORDO_AVX512_WARNINGS_ON
#endif

}  // namespace ordo::detail
