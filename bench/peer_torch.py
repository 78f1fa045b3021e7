#!/usr/bin/python3
"""Peer benchmark: the chunked Gated DeltaNet forward in PyTorch on CPU, as a
user would write it from the Hugging Face reference, at bench_kernels' shape.

    /usr/bin/python3 bench/peer_torch.py [--T 65536] [--H 4] [--D 128]
        [--chunk 64] [--threads N] [--reps 2] [--json OUT] [--selftest]

The algorithm is transformers' torch_chunk_gated_delta_rule (Qwen3-Next):
L2-normalise q and k in the kernel, scale q by 1/sqrt(Dk), cumulative log
decays per chunk, the masked k_beta k^T product, the row-by-row forward
substitution vectorised over (batch, head, chunk), the WY products, then the
sequential loop over chunks carrying the (Dk, Dv) state.  Written here from
the published algorithm, tensor for tensor, in float32, with no fusion or
rewrite a user would not make -- the point is to time what people run.

Inputs follow gdn_synth with GDN_SYNTH_SLOW_GATES (bench_kernels' default
--gates slow): q, k, v ~ N(0, 1), beta = sigmoid(N(0, 1)),
g = -A[h] softplus(N(0, 1) + 1) with A[h] log-uniform in [1e-4, 1e-1], so no
decay underflows to a subnormal (which would slow both sides; see
bench_kernels --gates).  The values differ from gdn_synth's (another RNG);
the times do not depend on them.

Threads: torch.set_num_threads(--threads, default all cores), and the same
count is written to the JSON so that bench_kernels --torch FILE pairs it
with kern_scan at the same shape and thread count.  Seconds are the best of
--reps calls, each call allocating its outputs, as kern_scan's are.

--selftest first checks the implementation against the token-by-token
recurrence (S = a S, S += k (beta (v - S^T k))^T, o = S^T q) in float64 on
a short case and exits non-zero if they disagree, so the peer being timed
is known to compute GDN.  Not run by meson test.
"""
import argparse
import json
import math
import os
import sys
import tempfile
import time

import torch
import torch.nn.functional as F


def l2norm(x, dim=-1, eps=1e-6):
    return x * torch.rsqrt((x * x).sum(dim=dim, keepdim=True) + eps)


def chunk_gated_delta_rule(query, key, value, g, beta, chunk_size=64, initial_state=None,
                           use_qk_l2norm_in_kernel=True):
    """q, k (B,T,H,Dk), v (B,T,H,Dv), g, beta (B,T,H) -> o (B,T,H,Dv), S (B,H,Dk,Dv)."""
    initial_dtype = query.dtype
    if use_qk_l2norm_in_kernel:
        query = l2norm(query)
        key = l2norm(key)
    # float32 as the reference computes; float64 stays float64 (the selftest)
    work = torch.float64 if initial_dtype == torch.float64 else torch.float32
    query, key, value, beta, g = [x.transpose(1, 2).contiguous().to(work)
                                  for x in (query, key, value, beta, g)]
    batch_size, num_heads, sequence_length, k_head_dim = key.shape
    v_head_dim = value.shape[-1]
    pad_size = (chunk_size - sequence_length % chunk_size) % chunk_size
    query = F.pad(query, (0, 0, 0, pad_size))
    key = F.pad(key, (0, 0, 0, pad_size))
    value = F.pad(value, (0, 0, 0, pad_size))
    beta = F.pad(beta, (0, pad_size))
    g = F.pad(g, (0, pad_size))
    total_sequence_length = sequence_length + pad_size
    query = query * (1 / (query.shape[-1] ** 0.5))

    v_beta = value * beta.unsqueeze(-1)
    k_beta = key * beta.unsqueeze(-1)
    query, key, value, k_beta, v_beta = [
        x.reshape(x.shape[0], x.shape[1], -1, chunk_size, x.shape[-1])
        for x in (query, key, value, k_beta, v_beta)]
    g = g.reshape(g.shape[0], g.shape[1], -1, chunk_size)
    mask = torch.triu(torch.ones(chunk_size, chunk_size, dtype=torch.bool), diagonal=0)

    g = g.cumsum(dim=-1)
    decay_mask = ((g.unsqueeze(-1) - g.unsqueeze(-2)).tril().exp()).tril()
    attn = -((k_beta @ key.transpose(-1, -2)) * decay_mask).masked_fill(mask, 0)
    for i in range(1, chunk_size):
        row = attn[..., i, :i].clone()
        sub = attn[..., :i, :i].clone()
        attn[..., i, :i] = row + (row.unsqueeze(-1) * sub).sum(-2)
    attn = attn + torch.eye(chunk_size, dtype=attn.dtype)
    value = attn @ v_beta
    k_cumdecay = attn @ (k_beta * g.exp().unsqueeze(-1))
    state = (torch.zeros(batch_size, num_heads, k_head_dim, v_head_dim, dtype=value.dtype)
             if initial_state is None else initial_state.to(value))
    out = torch.zeros_like(value)
    mask = torch.triu(torch.ones(chunk_size, chunk_size, dtype=torch.bool), diagonal=1)
    for i in range(0, total_sequence_length // chunk_size):
        q_i, k_i, v_i = query[:, :, i], key[:, :, i], value[:, :, i]
        attn = (q_i @ k_i.transpose(-1, -2) * decay_mask[:, :, i]).masked_fill_(mask, 0)
        v_new = v_i - k_cumdecay[:, :, i] @ state
        attn_inter = (q_i * g[:, :, i, :, None].exp()) @ state
        out[:, :, i] = attn_inter + attn @ v_new
        state = (state * g[:, :, i, -1, None, None].exp()
                 + (k_i * (g[:, :, i, -1, None] - g[:, :, i]).exp()[..., None]).transpose(-1, -2)
                 @ v_new)
    out = out.reshape(batch_size, num_heads, total_sequence_length, v_head_dim)
    out = out.transpose(1, 2).contiguous()[:, :sequence_length].to(initial_dtype)
    return out, state


def token_recurrence(q, k, v, g, beta):
    """The sequential definition, one token at a time (float64)."""
    B, T, H, Dk = k.shape
    Dv = v.shape[-1]
    q = l2norm(q) / math.sqrt(Dk)
    k = l2norm(k)
    S = torch.zeros(B, H, Dk, Dv, dtype=q.dtype)
    o = torch.zeros(B, T, H, Dv, dtype=q.dtype)
    for t in range(T):
        S = S * g[:, t].exp()[..., None, None]
        kt = k[:, t]
        delta = beta[:, t][..., None] * (v[:, t] - torch.einsum("bhkv,bhk->bhv", S, kt))
        S = S + kt[..., :, None] * delta[..., None, :]
        o[:, t] = torch.einsum("bhkv,bhk->bhv", S, q[:, t])
    return o, S


def synth(B, T, H, D, dtype, seed):
    gen = torch.Generator().manual_seed(seed)
    q = torch.randn(B, T, H, D, generator=gen, dtype=torch.float64)
    k = torch.randn(B, T, H, D, generator=gen, dtype=torch.float64)
    v = torch.randn(B, T, H, D, generator=gen, dtype=torch.float64)
    uA = torch.rand(H, generator=gen, dtype=torch.float64)
    A = torch.exp(math.log(1e-4) + uA * (math.log(1e-1) - math.log(1e-4)))
    a = torch.randn(B, T, H, generator=gen, dtype=torch.float64)
    g = -A * F.softplus(a + 1.0)
    beta = torch.sigmoid(torch.randn(B, T, H, generator=gen, dtype=torch.float64))
    return [x.to(dtype) for x in (q, k, v, g, beta)]


def selftest():
    # Fast-forgetting gates too (A up to 16), and T not a multiple of the chunk.
    q, k, v, g, beta = synth(2, 150, 3, 16, torch.float64, 7)
    g = g * torch.tensor([1.0, 30.0, 300.0], dtype=torch.float64)
    o_ref, s_ref = token_recurrence(q, k, v, g, beta)
    o, s = chunk_gated_delta_rule(q, k, v, g, beta, chunk_size=32)
    err = max((o - o_ref).abs().max().item(), (s - s_ref).abs().max().item())
    scale = max(o_ref.abs().max().item(), s_ref.abs().max().item())
    if not err <= 1e-10 * scale:
        print(f"peer_torch: selftest FAILED: chunked vs token recurrence max |diff| {err:.3e} "
              f"(scale {scale:.3e})", file=sys.stderr)
        return 1
    print(f"peer_torch: selftest ok: chunked vs token recurrence (float64, 2x150x3x16, "
          f"chunk 32) max |diff| {err:.2e}")
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--T", type=int, default=65536)
    ap.add_argument("--H", type=int, default=4)
    ap.add_argument("--D", type=int, default=128)
    ap.add_argument("--chunk", type=int, default=64)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--json")
    ap.add_argument("--selftest", action="store_true")
    a = ap.parse_args()
    if min(a.T, a.H, a.D, a.chunk, a.threads, a.reps) < 1:
        ap.error("every size, --threads and --reps must be positive")
    if a.selftest and selftest():
        return 1
    torch.set_num_threads(a.threads)
    q, k, v, g, beta = synth(1, a.T, a.H, a.D, torch.float32, 0)
    best = math.inf
    with torch.no_grad():
        for _ in range(a.reps):
            t0 = time.perf_counter()
            o, s = chunk_gated_delta_rule(q, k, v, g, beta, chunk_size=a.chunk)
            best = min(best, time.perf_counter() - t0)
    if not (torch.isfinite(o).all() and torch.isfinite(s).all()):
        print("peer_torch: non-finite output", file=sys.stderr)
        return 1
    impl = f"torch {torch.__version__} chunk_gated_delta_rule (HF reference), CPU"
    print(f"peer_torch: {impl}: B=1 T={a.T} H={a.H} D={a.D} C={a.chunk} "
          f"threads={torch.get_num_threads()}: best of {a.reps}: {best:.3f} s")
    if a.json:
        doc = {"impl": impl, "seconds": best, "threads": torch.get_num_threads(),
               "B": 1, "T": a.T, "H": a.H, "D": a.D, "chunk": a.chunk, "reps": a.reps,
               "gates": "slow", "torch_version": torch.__version__,
               "torch_parallel_info": torch.__config__.parallel_info().splitlines()[:6]}
        d = os.path.dirname(os.path.abspath(a.json))
        fd, tmp = tempfile.mkstemp(prefix=".peer_torch.", dir=d)
        with os.fdopen(fd, "w") as f:
            json.dump(doc, f, indent=2)
            f.write("\n")
        os.replace(tmp, a.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
