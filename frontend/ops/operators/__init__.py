"""The operations behind ``Tensor``'s operators, reduction methods and NumPy protocols, registered in
:mod:`frontend.tensor._operators` when :mod:`frontend.ops` is imported: ``_arithmetic`` (operators through
``matmul``, ``add``/``subtract``/``multiply``, ``apply`` and the reductions), ``_values`` (NumPy functions on
stored values: division, comparisons, zero-preserving ufuncs), ``_numpy`` (``__array_ufunc__`` and
``__array_function__``)."""
import numpy as np

from frontend.tensor._operators import register

from . import _arithmetic as ar
from ._numpy import array_function, array_ufunc

register({
    "matmul": ar.matmul, "add": ar.add, "subtract": ar.subtract, "multiply": ar.multiply, "divide": ar.divide,
    "floor_divide": ar.floor_divide, "remainder": ar.remainder, "power": ar.power, "negative": ar.negative,
    "positive": ar.positive, "absolute": ar.absolute,
    "less": ar.comparison(np.less), "less_equal": ar.comparison(np.less_equal),
    "greater": ar.comparison(np.greater), "greater_equal": ar.comparison(np.greater_equal),
    "equal": ar.comparison(np.equal), "not_equal": ar.comparison(np.not_equal),
    "bitwise_and": ar.comparison(np.bitwise_and), "bitwise_or": ar.comparison(np.bitwise_or),
    "bitwise_xor": ar.comparison(np.bitwise_xor), "invert": ar.invert,
    "left_shift": ar.comparison(np.left_shift), "right_shift": ar.comparison(np.right_shift),
    "sum": ar.reduction("sum"), "max": ar.reduction("max"), "min": ar.reduction("min"),
    "prod": ar.reduction("prod"), "mean": ar.mean,
    "array_ufunc": array_ufunc, "array_function": array_function,
})
