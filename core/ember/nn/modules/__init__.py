"""The layers of ember.nn, one module file per family, re-exported (matches torch.nn.modules)."""
from .module import Module  # noqa: F401
from .container import Sequential, ModuleList, ModuleDict, ParameterList, ParameterDict  # noqa: F401
from .linear import Identity, Linear, Bilinear  # noqa: F401
from .activation import (ReLU, ReLU6, LeakyReLU, GELU, SiLU, Sigmoid, Tanh, Softmax, LogSoftmax,  # noqa: F401
                         Softmin, Softplus, ELU, SELU, CELU, Hardtanh, Mish, Hardswish, Hardsigmoid, LogSigmoid,
                         Softsign, Tanhshrink, Hardshrink, Softshrink, Threshold, GLU, PReLU)
from .conv import Conv1d, Conv2d, ConvTranspose1d, ConvTranspose2d  # noqa: F401
from .pooling import (MaxPool1d, MaxPool2d, AvgPool1d, AvgPool2d, AdaptiveAvgPool1d,  # noqa: F401
                      AdaptiveAvgPool2d, AdaptiveMaxPool1d, AdaptiveMaxPool2d)
from .batchnorm import BatchNorm1d, BatchNorm2d, BatchNorm3d  # noqa: F401
from .normalization import LayerNorm, GroupNorm, RMSNorm  # noqa: F401
from .dropout import Dropout, Dropout1d, Dropout2d, Dropout3d, AlphaDropout  # noqa: F401
from .sparse import Embedding  # noqa: F401
from .flatten import Flatten, Unflatten  # noqa: F401
from .loss import (L1Loss, MSELoss, SmoothL1Loss, HuberLoss, CrossEntropyLoss, NLLLoss, BCELoss,  # noqa: F401
                   BCEWithLogitsLoss, KLDivLoss, SoftMarginLoss, PoissonNLLLoss, GaussianNLLLoss,
                   CosineEmbeddingLoss, MarginRankingLoss, HingeEmbeddingLoss)
from .rnn import RNNBase, RNN, LSTM, GRU, RNNCellBase, RNNCell, LSTMCell, GRUCell  # noqa: F401
from .attention import MultiheadAttention  # noqa: F401
from .transformer import TransformerEncoderLayer, TransformerEncoder  # noqa: F401
