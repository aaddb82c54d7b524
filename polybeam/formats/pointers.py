"""Raw pointers into arrays for the parsing kernels' helpers (numba intrinsics).

Numba reference-counts every array passed to a function with atomic
increments; in a loop calling small helpers per token that costs more than
the parsing itself. The kernels hand their helpers these uncounted pointers
while the array arguments keep the bytes alive.
"""

from __future__ import annotations

from numba.core import types
from numba.extending import intrinsic


@intrinsic
def byte_pointer(typingctx, array):
    """A raw pointer to a uint8 array's bytes, indexable like the array.

    Numba reference-counts every array passed to a function with atomic
    increments; in a loop calling small helpers per token that costs more than
    the parsing itself (~15 ns per call here). A raw pointer is not counted, so
    the kernels hand one to their helpers while the array argument keeps the
    bytes alive. Indexing is unchecked, as it is for arrays; the array must be
    contiguous, as blocks from ``np.frombuffer`` are.
    """
    if not (isinstance(array, types.Array) and array.dtype == types.uint8 and array.ndim == 1 and array.layout == "C"):
        return None

    def codegen(context, builder, signature, args):
        return context.make_array(signature.args[0])(context, builder, args[0]).data

    return types.CPointer(types.uint8)(array), codegen


@intrinsic
def array_pointer(typingctx, array):
    """A raw pointer to a contiguous 1-D array of any number type, as :func:`byte_pointer`.

    For lookup tables handed to a helper called once per line.
    """
    if not (isinstance(array, types.Array) and array.ndim == 1 and array.layout == "C"):
        return None

    def codegen(context, builder, signature, args):
        return context.make_array(signature.args[0])(context, builder, args[0]).data

    return types.CPointer(array.dtype)(array), codegen
