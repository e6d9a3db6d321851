"""Small models of the three families Client.train is tested on (an MLP, a CNN, a character-level
transformer LM), their losses and their data, shared by the capture and the training tests."""

import torch
from torch.nn import functional as F


class CharLM(torch.nn.Module):
    """Token and position embeddings, one causal transformer encoder layer (GELU), a linear head."""

    def __init__(self, vocab=13, dim=16, heads=2, length=7):
        super().__init__()
        self.tokens = torch.nn.Embedding(vocab, dim)
        self.positions = torch.nn.Parameter(torch.randn(length, dim) * 0.1)
        self.block = torch.nn.TransformerEncoderLayer(dim, heads, 2 * dim, dropout=0.0,
                                                      activation="gelu", batch_first=True)
        self.head = torch.nn.Linear(dim, vocab)
        mask = torch.triu(torch.full((length, length), float("-inf")), diagonal=1)
        self.register_buffer("mask", mask)

    def forward(self, x):
        h = self.tokens(x) + self.positions
        return self.head(self.block(h, src_mask=self.mask))


def lm_loss(logits, y):
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))


def mlp():
    return torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.GELU(), torch.nn.Linear(16, 4))


def cnn():
    return torch.nn.Sequential(
        torch.nn.Conv2d(1, 4, 3, padding=1), torch.nn.ReLU(), torch.nn.AvgPool2d(2),
        torch.nn.Conv2d(4, 6, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
        torch.nn.Flatten(), torch.nn.Linear(6 * 2 * 2, 3))


def training_family(name, samples, seed=0):
    """(model, loss_fn, x, y) with `samples` samples; the model's initial weights from seed 0."""
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(seed + 100)
    if name == "mlp":
        return mlp(), F.cross_entropy, torch.randn(samples, 8, generator=g), \
            torch.randint(0, 4, (samples,), generator=g)
    if name == "cnn":
        return cnn(), F.cross_entropy, torch.randn(samples, 1, 8, 8, generator=g), \
            torch.randint(0, 3, (samples,), generator=g)
    text = torch.randint(0, 13, (samples, 8), generator=g)  # next-token pairs of 7 tokens
    return CharLM(), lm_loss, text[:, :7].contiguous(), text[:, 1:].contiguous()
