#!/usr/bin/env python3
"""Prints the constants of goblin_math.h's transcendental functions (needs mpmath).

Every constant is the double nearest the exact value (mpmath at 200 bits), printed with 17
significant digits so that C++ and OpenCL C parse it to the same double.
"""
import math

import mpmath

mpmath.mp.prec = 200


def lit(value) -> str:
    return repr(float(value)) if float(value) != 0 else "0.0"


def main() -> None:
    ln2 = mpmath.log(2)
    mantissa, exponent = math.frexp(float(ln2))
    ln2_hi = math.ldexp(math.floor(math.ldexp(mantissa, 32)), exponent - 32)  # k·LN2_HI exact
    print("LN2_HI", repr(ln2_hi), "LN2_LO", lit(ln2 - ln2_hi), "INV_LN2", lit(1 / ln2))
    print("EXPM1 1/n!, n = 2..13:", ", ".join(lit(1 / mpmath.factorial(n)) for n in range(2, 14)))
    print("LOG 2/(2n+1), n = 1..11:", ", ".join(lit(mpmath.mpf(2) / (2 * n + 1)) for n in range(1, 12)))
    print("SQRT_HALF", lit(mpmath.sqrt(0.5)), "TWO_OVER_SQRTPI", lit(2 / mpmath.sqrt(mpmath.pi)),
          "INV_SQRTPI", lit(1 / mpmath.sqrt(mpmath.pi)))
    print("ERF0 (Taylor at 0 in z = x²):", ", ".join(
        lit(2 / mpmath.sqrt(mpmath.pi) * (-1) ** n / (mpmath.factorial(n) * (2 * n + 1))) for n in range(10)))
    print("ERF_TABLE (12 intervals of 0.25 from 0.25, Taylor coefficients 0..15 at the centres):")
    for i in range(12):
        centre = 0.25 + 0.25 * (i + 0.5)
        print("    " + ", ".join(lit(v) for v in mpmath.taylor(mpmath.erf, centre, 15)) + ",")
    print("LGAMMA near 2: (1 - γ) =", lit(1 - mpmath.euler), "then (-1)^k (ζ(k) - 1)/k, k = 2..31:")
    print("    " + ", ".join(lit((-1) ** k * (mpmath.zeta(k) - 1) / k) for k in range(2, 32)))
    print("STIRLING B2k/(2k(2k-1)), k = 1..9:", ", ".join(
        lit(mpmath.bernoulli(2 * k) / (2 * k * (2 * k - 1))) for k in range(1, 10)))
    print("HALF_LOG_2PI", lit(mpmath.log(2 * mpmath.pi) / 2), "PI", lit(mpmath.pi))
    print("SIN (-1)^n/(2n+1)!, n = 1..10:", ", ".join(lit(mpmath.mpf(-1) ** n / mpmath.factorial(2 * n + 1))
                                                  for n in range(1, 11)))
    print("COS (-1)^n/(2n)!, n = 1..10:", ", ".join(lit(mpmath.mpf(-1) ** n / mpmath.factorial(2 * n))
                                                for n in range(1, 11)))


if __name__ == "__main__":
    main()
