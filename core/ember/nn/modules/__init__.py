"""The layers of ember.nn, one module file per family, re-exported (matches torch.nn.modules)."""
from .module import Module  # noqa: F401
from .container import Container, Sequential, ModuleList, ModuleDict, ParameterList, ParameterDict  # noqa: F401
from .linear import Identity, Linear, Bilinear, LazyLinear  # noqa: F401
from .activation import (ReLU, ReLU6, LeakyReLU, GELU, SiLU, Sigmoid, Tanh, Softmax, LogSoftmax,  # noqa: F401
                         Softmin, Softplus, ELU, SELU, CELU, Hardtanh, Mish, Hardswish, Hardsigmoid, LogSigmoid,
                         Softsign, Tanhshrink, Hardshrink, Softshrink, Threshold, GLU, PReLU,
                         RReLU, Softmax2d)
from .conv import (Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d, ConvTranspose3d,  # noqa: F401
                   LazyConv1d, LazyConv2d, LazyConv3d, LazyConvTranspose1d, LazyConvTranspose2d,
                   LazyConvTranspose3d)
from .pooling import (MaxPool1d, MaxPool2d, MaxPool3d, AvgPool1d, AvgPool2d, AvgPool3d,  # noqa: F401
                      AdaptiveAvgPool1d, AdaptiveAvgPool2d, AdaptiveAvgPool3d, AdaptiveMaxPool1d,
                      AdaptiveMaxPool2d, AdaptiveMaxPool3d, LPPool1d, LPPool2d, LPPool3d, MaxUnpool1d,
                      MaxUnpool2d, MaxUnpool3d, FractionalMaxPool2d, FractionalMaxPool3d)
from .batchnorm import (BatchNorm1d, BatchNorm2d, BatchNorm3d, LazyBatchNorm1d, LazyBatchNorm2d,  # noqa: F401
                        LazyBatchNorm3d, SyncBatchNorm)
from .normalization import LayerNorm, GroupNorm, RMSNorm, LocalResponseNorm, CrossMapLRN2d  # noqa: F401
from .instancenorm import (InstanceNorm1d, InstanceNorm2d, InstanceNorm3d, LazyInstanceNorm1d,  # noqa: F401
                           LazyInstanceNorm2d, LazyInstanceNorm3d)
from .dropout import Dropout, Dropout1d, Dropout2d, Dropout3d, AlphaDropout, FeatureAlphaDropout  # noqa: F401
from .sparse import Embedding, EmbeddingBag  # noqa: F401
from .flatten import Flatten, Unflatten  # noqa: F401
from .loss import CTCLoss, NLLLoss2d  # noqa: F401
from .adaptive import AdaptiveLogSoftmaxWithLoss  # noqa: F401
from .loss import (L1Loss, MSELoss, SmoothL1Loss, HuberLoss, CrossEntropyLoss, NLLLoss, BCELoss,  # noqa: F401
                   BCEWithLogitsLoss, KLDivLoss, SoftMarginLoss, PoissonNLLLoss, GaussianNLLLoss,
                   CosineEmbeddingLoss, MarginRankingLoss, HingeEmbeddingLoss, MultiMarginLoss,
                   MultiLabelMarginLoss, MultiLabelSoftMarginLoss, TripletMarginLoss,
                   TripletMarginWithDistanceLoss)
from .rnn import RNNBase, RNN, LSTM, GRU, RNNCellBase, RNNCell, LSTMCell, GRUCell  # noqa: F401
from .attention import MultiheadAttention  # noqa: F401
from .transformer import (Transformer, TransformerEncoderLayer, TransformerEncoder,  # noqa: F401
                          TransformerDecoderLayer, TransformerDecoder)
from .pixelshuffle import PixelShuffle, PixelUnshuffle  # noqa: F401
from .channelshuffle import ChannelShuffle  # noqa: F401
from .upsampling import Upsample, UpsamplingNearest2d, UpsamplingBilinear2d  # noqa: F401
from .fold import Fold, Unfold  # noqa: F401
from .distance import PairwiseDistance, CosineSimilarity  # noqa: F401
from .padding import (CircularPad1d, CircularPad2d, CircularPad3d, ConstantPad1d, ConstantPad2d,  # noqa: F401
                      ConstantPad3d, ReflectionPad1d, ReflectionPad2d, ReflectionPad3d, ReplicationPad1d,
                      ReplicationPad2d, ReplicationPad3d, ZeroPad1d, ZeroPad2d, ZeroPad3d)
from .lazy import LazyModuleMixin  # noqa: F401
from .linear_cross_entropy import LinearCrossEntropyLoss, LinearCrossEntropyOptions  # noqa: F401
