/* C99's complex functions for numpy under Wine (wheels/cross.py's Wine runs only; never in a
 * wheel). Debian 12's Wine 8.0 leaves most of them unimplemented in its ucrtbase.dll (crealf,
 * cimagf, cabsf, cexp, ...: calling one ends the process), and numpy's Windows wheels import
 * them from api-ms-win-crt-math-l1-1-0.dll, which Wine maps to ucrtbase.dll whatever DLL
 * lies beside the program. cross.py renames that import, in the numpy extensions that use one
 * of these, to this DLL, which defines them and forwards the rest of what they import to
 * ucrtbase.dll.
 *
 * The Universal CRT passes its complex types as structures (_Fcomplex: two floats, in a
 * register; _Dcomplex and _Lcomplex: two doubles, MSVC's long double being a double, by
 * reference), as these are declared. The formulas are the textbook ones, without the care for
 * infinities, signed zeros and overflow that a C library takes: enough for the tests, which
 * store and compare complex numbers and do no complex arithmetic with them.
 */
#include <math.h>

typedef struct { float re, im; } fcx;
typedef struct { double re, im; } dcx;

static dcx make(double re, double im)
{
    dcx z = {re, im};
    return z;
}

static dcx mul(dcx a, dcx b)
{
    return make(a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re);
}

static dcx dlog(dcx z)
{
    return make(log(hypot(z.re, z.im)), atan2(z.im, z.re));
}

static dcx dexp(dcx z)
{
    double e = exp(z.re);
    return make(e * cos(z.im), e * sin(z.im));
}

static dcx dpow(dcx a, dcx b)
{
    if (a.re == 0 && a.im == 0)
        return b.re == 0 && b.im == 0 ? make(1, 0) : make(0, 0);
    return dexp(mul(b, dlog(a)));
}

static dcx dsqrt(dcx z)
{
    if (z.re == 0 && z.im == 0)
        return make(0, z.im);
    double t = sqrt((fabs(z.re) + hypot(z.re, z.im)) / 2);
    if (z.re >= 0)
        return make(t, z.im / (2 * t));
    return make(fabs(z.im) / (2 * t), copysign(t, z.im));
}

static dcx dsin(dcx z) { return make(sin(z.re) * cosh(z.im), cos(z.re) * sinh(z.im)); }
static dcx dcos(dcx z) { return make(cos(z.re) * cosh(z.im), -sin(z.re) * sinh(z.im)); }
static dcx dsinh(dcx z) { return make(sinh(z.re) * cos(z.im), cosh(z.re) * sin(z.im)); }
static dcx dcosh(dcx z) { return make(cosh(z.re) * cos(z.im), sinh(z.re) * sin(z.im)); }

static dcx dtan(dcx z)
{
    double d = cos(2 * z.re) + cosh(2 * z.im);
    return make(sin(2 * z.re) / d, sinh(2 * z.im) / d);
}

static dcx dtanh(dcx z)
{
    double d = cosh(2 * z.re) + cos(2 * z.im);
    return make(sinh(2 * z.re) / d, sin(2 * z.im) / d);
}

static dcx dconj(dcx z) { return make(z.re, -z.im); }

static dcx dproj(dcx z)
{
    if (isinf(z.re) || isinf(z.im))
        return make(INFINITY, copysign(0.0, z.im));
    return z;
}

static dcx widen(fcx z) { return make(z.re, z.im); }

static fcx narrow(dcx z)
{
    fcx f = {(float)z.re, (float)z.im};
    return f;
}

/* Each function for float, double and long double (a double here). */
#define REAL_PART(name, expr)                                                                 \
    float name##f(fcx z) { return (float)(expr(widen(z))); }                                  \
    double name(dcx z) { return expr(z); }                                                     \
    double name##l(dcx z) { return expr(z); }
#define COMPLEX1(name, fn)                                                                    \
    fcx name##f(fcx z) { return narrow(fn(widen(z))); }                                        \
    dcx name(dcx z) { return fn(z); }                                                          \
    dcx name##l(dcx z) { return fn(z); }

static double real_of(dcx z) { return z.re; }
static double imag_of(dcx z) { return z.im; }
static double abs_of(dcx z) { return hypot(z.re, z.im); }
static double arg_of(dcx z) { return atan2(z.im, z.re); }

REAL_PART(creal, real_of)
REAL_PART(cimag, imag_of)
REAL_PART(cabs, abs_of)
REAL_PART(carg, arg_of)
COMPLEX1(conj, dconj)
COMPLEX1(cproj, dproj)
COMPLEX1(cexp, dexp)
COMPLEX1(clog, dlog)
COMPLEX1(csqrt, dsqrt)
COMPLEX1(csin, dsin)
COMPLEX1(ccos, dcos)
COMPLEX1(ctan, dtan)
COMPLEX1(csinh, dsinh)
COMPLEX1(ccosh, dcosh)
COMPLEX1(ctanh, dtanh)

fcx cpowf(fcx a, fcx b) { return narrow(dpow(widen(a), widen(b))); }
dcx cpow(dcx a, dcx b) { return dpow(a, b); }
dcx cpowl(dcx a, dcx b) { return dpow(a, b); }
