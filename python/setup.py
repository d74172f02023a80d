# Builds the ordo Python package with CMake (ORDO_PYTHON=ON) over the source tree one level up:
#   python3 -m pip install --no-build-isolation ./python
# Needs only Debian packages (pybind11-dev, python3-dev, python3-setuptools, python3-wheel and the
# C++ build's own, cmake/debian-packages.txt); nothing is fetched from a package index.
import os
import shutil
import subprocess
import sys
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


class CMakeExtension(Extension):
    def __init__(self, name):
        super().__init__(name, sources=[])


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        build = Path(os.environ.get("ORDO_PYTHON_BUILD_DIR", ROOT / "build-python")).resolve()
        configure = ["cmake", "-S", str(ROOT), "-B", str(build), "-DCMAKE_BUILD_TYPE=Release", "-DORDO_PYTHON=ON",
                     "-DORDO_BUILD_TESTS=OFF", "-DORDO_BUILD_BENCHMARKS=OFF", f"-DPython_EXECUTABLE={sys.executable}"]
        if shutil.which("ccache"):
            configure.append("-DCMAKE_CXX_COMPILER_LAUNCHER=ccache")
        subprocess.check_call(configure)
        jobs = os.environ.get("JOBS", str(os.cpu_count() or 1))
        subprocess.check_call(["cmake", "--build", str(build), "-j", jobs, "--target", "_ordo"])
        built = next((build / "python" / "ordo").glob("_ordo*.so"))
        target = Path(self.get_ext_fullpath(ext.name))
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(built, target)


def version():
    for line in (ROOT / "CMakeLists.txt").read_text().splitlines():
        if line.startswith("project(ordo VERSION"):
            return line.split()[2]
    return "0"


setup(
    name="ordo",
    version=version(),
    description="ordo: a small transformer inference engine with pluggable position schemes",
    packages=["ordo"],
    package_dir={"ordo": "ordo"},
    ext_modules=[CMakeExtension("ordo._ordo")],
    cmdclass={"build_ext": CMakeBuild},
    python_requires=">=3.8",
    zip_safe=False,
)
