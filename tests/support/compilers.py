"""The C compiler a test's setuptools build would use, for the tests that build an extension
(a machine with a wheel installed need not have one: Windows without Visual Studio, or Wine)."""
import shutil


def c_compiler():
    """The C compiler setuptools would build an extension with, or None where there is none."""
    from setuptools._distutils import ccompiler, sysconfig

    compiler = ccompiler.new_compiler()
    if compiler.compiler_type == "msvc":  # looks for Visual Studio
        try:
            compiler.initialize()
        except Exception as e:
            # No Visual Studio: DistutilsPlatformError, or in newer setuptools (84) the
            # PlatformError of its compilers package, which it may load under `distutils.` as
            # well (so matched by name: a class imported here could be another copy).
            if type(e).__name__ not in ("DistutilsPlatformError", "PlatformError"):
                raise
            return None
        return compiler.cc
    sysconfig.customize_compiler(compiler)
    return shutil.which(compiler.compiler_so[0])
