"""ember.nn.utils: gradient clipping and parameter/vector conversion (matches torch.nn.utils)."""
from .clip_grad import (clip_grad_norm_, clip_grad_norm, clip_grad_value_, get_total_norm,  # noqa: F401
                        clip_grads_with_norm_)
from .convert_parameters import parameters_to_vector, vector_to_parameters  # noqa: F401
