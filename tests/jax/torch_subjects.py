"""torch functions the tests hand to gdn-parity-jax by MODULE:FUNCTION with
--signature hf (transformers' parameter names): a token loop of the Gated
DeltaNet recurrence, written here, and the same loop behind a wrong backward.
Imported only where torch is installed (.venv-upstream, scripts/upstream.sh)."""

import torch


def recurrent(query, key, value, g, beta, chunk_size=64, initial_state=None,
              output_final_state=False, use_qk_l2norm_in_kernel=False):
    """S_t = exp(g_t) S_{t-1} + k_t (beta_t (v_t - k_t^T exp(g_t) S_{t-1}))^T,
    o_t = S_t^T q_t Dk^-1/2; (B, T, H, D) tensors, float32, differentiable."""
    if use_qk_l2norm_in_kernel:
        query = query * torch.rsqrt((query * query).sum(-1, keepdim=True) + 1e-6)
        key = key * torch.rsqrt((key * key).sum(-1, keepdim=True) + 1e-6)
    B, T, H, Dk = query.shape
    Dv = value.shape[-1]
    q = query * Dk ** -0.5
    S = initial_state if initial_state is not None else query.new_zeros(B, H, Dk, Dv)
    outs = []
    for t in range(T):
        S = S * torch.exp(g[:, t])[..., None, None]
        kt = key[:, t]
        delta = (value[:, t] - torch.einsum("bhk,bhkv->bhv", kt, S)) * beta[:, t][..., None]
        S = S + kt[..., :, None] * delta[..., None, :]
        outs.append(torch.einsum("bhk,bhkv->bhv", q[:, t], S))
    return torch.stack(outs, 1), (S if output_final_state else None)


class _WrongDk(torch.autograd.Function):
    """The identity forward; its backward scales token 3's key gradient by
    1 + 1e-3 (a correct forward behind a wrong backward)."""

    @staticmethod
    def forward(ctx, k):
        return k.clone()

    @staticmethod
    def backward(ctx, grad):
        grad = grad.clone()
        grad[:, 3] *= 1 + 1e-3
        return grad


def recurrent_wrong_dk(query, key, value, g, beta, chunk_size=64, initial_state=None,
                       output_final_state=False, use_qk_l2norm_in_kernel=False):
    return recurrent(query, _WrongDk.apply(key), value, g, beta, chunk_size, initial_state,
                     output_final_state, use_qk_l2norm_in_kernel)
