"""Real model code the planner must handle, in tiny random configurations (nothing downloaded):
torchvision's ResNet-18 and VisionTransformer, Hugging Face's GPT-2 (with its LM head tied to the
token embedding) and BERT. Installed for the tests by scripts/real_models_env.sh (pinned versions
that run on Debian 12's PyTorch 1.13); when they are missing, the tests that need them fail under
CI=true and skip, with the reason, elsewhere.

Each builder seeds torch and returns (module in eval mode, example inputs of `rows` rows, a
function of a numpy-free seed that makes other inputs of the same shapes).
"""

import os
import warnings

import pytest
import torch


def require(module_name):
    """Imports `module_name` or fails (CI) / skips (elsewhere) saying how to install it."""
    try:
        with warnings.catch_warnings():
            # torchvision's compiled image ops ask for PyTorch's own build; the models do not.
            warnings.filterwarnings("ignore", message="Failed to load image Python extension")
            return __import__(module_name)
    except ImportError as missing:
        reason = ("%s is not installed (%s): run bash scripts/real_models_env.sh"
                  % (module_name, missing))
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail(reason)
        pytest.skip(reason)


def images(rows, seed, size=32):
    return (torch.randn(rows, 3, size, size, generator=torch.Generator().manual_seed(seed)),)


def tokens(rows, seed, vocab, length):
    return (torch.randint(0, vocab, (rows, length), generator=torch.Generator().manual_seed(seed)),)


def resnet18():
    """torchvision's ResNet-18 as it is (11.2 M parameters, 43 MiB), 10 classes, 32×32 images."""
    torchvision = require("torchvision")
    torch.manual_seed(1)
    return torchvision.models.resnet18(num_classes=10).eval(), images


def vision_transformer():
    """torchvision's VisionTransformer: 4 layers of width 128 on 32×32 images in 8×8 patches."""
    torchvision = require("torchvision")
    torch.manual_seed(2)
    model = torchvision.models.VisionTransformer(image_size=32, patch_size=8, num_layers=4,
                                                 num_heads=4, hidden_dim=128, mlp_dim=512,
                                                 num_classes=10)
    torch.nn.init.normal_(model.heads.head.weight, std=0.05)  # torchvision starts it at zero
    return model.eval(), images


GPT2_VOCAB, GPT2_LENGTH = 512, 16


def gpt2_lm():
    """Hugging Face's GPT2LMHeadModel (its output head is its token embedding): 4 layers of
    width 128, 512 tokens; called with token ids, returns the logits."""
    transformers = require("transformers")
    torch.manual_seed(3)
    config = transformers.GPT2Config(n_layer=4, n_embd=128, n_head=4, vocab_size=GPT2_VOCAB,
                                     n_positions=GPT2_LENGTH, resid_pdrop=0.0, embd_pdrop=0.0,
                                     attn_pdrop=0.0)
    model = transformers.GPT2LMHeadModel(config).eval()
    assert model.lm_head.weight is model.transformer.wte.weight  # tied
    return Logits(model), lambda rows, seed: tokens(rows, seed, GPT2_VOCAB, GPT2_LENGTH)


BERT_VOCAB, BERT_LENGTH = 512, 16


def bert():
    """Hugging Face's BertModel: 4 layers of width 128; called with token ids and an attention
    mask (as its tokenizer gives them), returns the last hidden state."""
    transformers = require("transformers")
    torch.manual_seed(4)
    config = transformers.BertConfig(num_hidden_layers=4, hidden_size=128, num_attention_heads=4,
                                     intermediate_size=512, vocab_size=BERT_VOCAB,
                                     max_position_embeddings=BERT_LENGTH)

    def inputs(rows, seed):
        (ids,) = tokens(rows, seed, BERT_VOCAB, BERT_LENGTH)
        mask = torch.ones_like(ids)
        mask[::2, BERT_LENGTH - 3:] = 0  # every other row padded at its end
        return ids, mask

    return HiddenState(transformers.BertModel(config).eval()), inputs


class Logits(torch.nn.Module):
    """A Hugging Face LM called the PyTorch way: token ids in, logits out."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, ids):
        return self.model(ids).logits


class HiddenState(torch.nn.Module):
    """A Hugging Face encoder called the PyTorch way: (ids, attention mask) in, hidden state out."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, ids, mask):
        return self.model(ids, attention_mask=mask).last_hidden_state


ALL = {"resnet18": resnet18, "vision_transformer": vision_transformer, "gpt2_lm": gpt2_lm,
       "bert": bert}



# ---- training: (model called with one tensor, loss_fn(output, y), data(rows, seed) → (x, y)) --

def cross_entropy(logits, y):
    return torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))


def labels(rows, seed, classes=10):
    return torch.randint(0, classes, (rows,), generator=torch.Generator().manual_seed(seed + 100))


def resnet18_to_train():
    """ResNet-18 with GroupNorm in place of BatchNorm (whose batch statistics differ per
    micro-batch: goblin refuses it in training mode), as torchvision's norm_layer allows."""
    torchvision = require("torchvision")
    torch.manual_seed(1)
    model = torchvision.models.resnet18(num_classes=10,
                                        norm_layer=lambda c: torch.nn.GroupNorm(8, c)).eval()
    return model, cross_entropy, lambda rows, seed: (images(rows, seed)[0], labels(rows, seed))


def vision_transformer_to_train():
    model, _ = vision_transformer()
    return model, cross_entropy, lambda rows, seed: (images(rows, seed)[0], labels(rows, seed))


def gpt2_lm_to_train():
    model, make = gpt2_lm()

    def data(rows, seed):
        (x,) = make(rows, seed)
        return x, torch.roll(x, -1, dims=1)

    return model, cross_entropy, data


class PaddedClassifier(torch.nn.Module):
    """BertForSequenceClassification called with token ids only: token 0 is padding, masked."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, ids):
        return self.model(ids, attention_mask=(ids != 0).long()).logits


def bert_to_train():
    transformers = require("transformers")
    torch.manual_seed(4)
    config = transformers.BertConfig(num_hidden_layers=4, hidden_size=128, num_attention_heads=4,
                                     intermediate_size=512, vocab_size=BERT_VOCAB,
                                     max_position_embeddings=BERT_LENGTH, num_labels=10)
    model = PaddedClassifier(transformers.BertForSequenceClassification(config).eval())

    def data(rows, seed):
        (ids,) = tokens(rows, seed, BERT_VOCAB, BERT_LENGTH)
        ids[::2, BERT_LENGTH - 3:] = 0
        return ids, labels(rows, seed)

    return model, cross_entropy, data


TO_TRAIN = {"resnet18": resnet18_to_train, "vision_transformer": vision_transformer_to_train,
            "gpt2_lm": gpt2_lm_to_train, "bert": bert_to_train}
