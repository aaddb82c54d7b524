"""polybeam's build backend: setuptools', plus what compiling the numba kernels into a wheel needs.

Building a wheel runs ``python -m polybeam.warm`` on the build tree (setup.py,
``warm_kernel_cache``) so that the wheel ships compiled kernels; that needs the
kernels' own dependencies in the build environment. Only wheels ask for them:
an editable install (``pip install -e .``) or an sdist builds with setuptools
alone, as before.
"""

from setuptools import build_meta as _setuptools
from setuptools.build_meta import *  # noqa: F401,F403  (every other hook is setuptools')

# What polybeam.warm imports, with install_requires' bounds (numba's: setup.py's NUMBA),
# so that the build compiles with the numba the installation will run.
KERNEL_REQUIRES = ["numpy>=1.26", "scipy>=1.11", "numba>=0.60,<0.69", "pyarrow>=14"]


def get_requires_for_build_wheel(config_settings=None):
    return _setuptools.get_requires_for_build_wheel(config_settings) + KERNEL_REQUIRES
