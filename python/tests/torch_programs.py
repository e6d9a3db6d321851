"""Real PyTorch programs captured by the tests and the benchmark: an MLP, a small CNN and a
transformer block (self-attention with a causal mask, layer norm, GELU MLP, residuals).

Each `make_*` seeds torch, builds the module in eval mode and returns (module, example input
factory); the factory takes a numpy Generator and returns the input tensors of one batch.
"""

import math

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F


class MLP(nn.Module):
    """Linear → ReLU → Linear → log_softmax."""

    def __init__(self, features=16, hidden=32, classes=10):
        super().__init__()
        self.hidden = nn.Linear(features, hidden)
        self.out = nn.Linear(hidden, classes)

    def forward(self, x):
        return F.log_softmax(self.out(F.relu(self.hidden(x))), dim=-1)


class SmallCNN(nn.Module):
    """(Conv2d → ReLU → MaxPool2d) twice → Linear, on 1×16×16 images."""

    def __init__(self, channels=1, size=16, classes=10):
        super().__init__()
        self.conv1 = nn.Conv2d(channels, 8, kernel_size=3, padding=1)
        self.conv2 = nn.Conv2d(8, 16, kernel_size=3, padding=1)
        self.pool = nn.MaxPool2d(2)
        self.fc = nn.Linear(16 * (size // 4) * (size // 4), classes)

    def forward(self, x):
        x = self.pool(F.relu(self.conv1(x)))
        x = self.pool(F.relu(self.conv2(x)))
        return self.fc(torch.flatten(x, 1))


class CausalSelfAttention(nn.Module):
    """Multi-head self-attention written with matmuls and softmax, with a causal mask."""

    def __init__(self, dim, heads, length=None):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        # With a known length the mask is a buffer (a constant of the captured graph), so a long
        # sequence's mask need not be built inside the graph.
        self.mask = None if length is None else \
            torch.triu(torch.ones(length, length, dtype=torch.bool), diagonal=1)

    def forward(self, x):
        batch, length, dim = x.shape
        head_dim = dim // self.heads
        q, k, v = self.qkv(x).split(dim, dim=-1)
        q, k, v = (t.view(batch, length, self.heads, head_dim).transpose(1, 2) for t in (q, k, v))
        scores = q @ k.transpose(-2, -1) / math.sqrt(head_dim)
        mask = self.mask if self.mask is not None else \
            torch.triu(torch.ones(length, length, dtype=torch.bool), diagonal=1)
        weights = torch.softmax(scores.masked_fill(mask, float("-inf")), dim=-1)
        y = (weights @ v).transpose(1, 2).contiguous().view(batch, length, dim)
        return self.proj(y)


class TransformerBlock(nn.Module):
    """Pre-norm block: x + attention(LN(x)), then + MLP(LN(x)) with a GELU."""

    def __init__(self, dim=32, heads=4, hidden=64, length=None):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim)
        self.attention = CausalSelfAttention(dim, heads, length)
        self.norm2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, hidden), nn.GELU(), nn.Linear(hidden, dim))

    def forward(self, x):
        x = x + self.attention(self.norm1(x))
        return x + self.mlp(self.norm2(x))


class TorchMultiheadAttention(nn.Module):
    """torch.nn.MultiheadAttention used as causal self-attention (batch first)."""

    def __init__(self, dim=32, heads=4, length=8):
        super().__init__()
        self.attention = nn.MultiheadAttention(dim, heads, batch_first=True)
        self.register_buffer("mask", torch.triu(torch.ones(length, length, dtype=torch.bool), 1))

    def forward(self, x):
        return self.attention(x, x, x, attn_mask=self.mask, need_weights=False)[0]


def _float_input(*shape):
    return lambda rng: (torch.from_numpy(rng.standard_normal(shape).astype(np.float32)),)


def make_mlp(batch=8):
    torch.manual_seed(0)
    return MLP().eval(), _float_input(batch, 16)


def make_cnn(batch=4):
    torch.manual_seed(1)
    return SmallCNN().eval(), _float_input(batch, 1, 16, 16)


def make_transformer_block(batch=2, length=8):
    torch.manual_seed(2)
    return TransformerBlock().eval(), _float_input(batch, length, 32)


def make_torch_attention(batch=2, length=8):
    torch.manual_seed(3)
    return TorchMultiheadAttention(length=length).eval(), _float_input(batch, length, 32)


PROGRAMS = {"mlp": make_mlp, "cnn": make_cnn, "transformer_block": make_transformer_block,
            "torch_multihead_attention": make_torch_attention}


class TiedDecoderLM(nn.Module):
    """A decoder LM of our own: token embeddings and learned positions, pre-norm causal blocks, a
    final LayerNorm, and an output head tied to the token embeddings (logits = h·Eᵀ), so that one
    parameter is read twice and its gradient is the sum of both uses."""

    def __init__(self, vocab=512, dim=128, heads=4, layers=2, length=16):
        super().__init__()
        self.tokens = nn.Embedding(vocab, dim)
        self.positions = nn.Parameter(torch.randn(length, dim) * 0.02)
        self.blocks = nn.ModuleList(TransformerBlock(dim, heads, 4 * dim, length)
                                    for _ in range(layers))
        self.norm = nn.LayerNorm(dim)

    def forward(self, x):
        h = self.tokens(x) + self.positions
        for block in self.blocks:
            h = block(h)
        return self.norm(h) @ self.tokens.weight.t()
