"""of.nn: modules, functional ops, initialisers and the Graph class."""

from . import functional, init, parallel, utils  # noqa: F401
from .graph import Graph  # noqa: F401
from .modules import *  # noqa: F401,F403
from .modules import Module, __all__ as _modules_all  # noqa: F401
from .transformer import *  # noqa: F401,F403
from .transformer import __all__ as _transformer_all
from .._tensor import Parameter  # noqa: F401
from .parallel import DataParallel  # noqa: F401

__all__ = list(_modules_all) + list(_transformer_all) + ["DataParallel", "Graph", "Parameter",
                                                          "functional",
                                                          "init", "parallel", "utils"]
