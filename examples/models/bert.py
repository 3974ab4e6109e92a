"""BERT pretraining (Devlin et al. 2018; the layout of Google's
modeling.py and of Hugging Face's BertForPreTraining, whose state_dict
keys it keeps), written against PyTorch. train_bert.py and
test/Python/test_workloads.py run it under PyTorch as written and under of
with only its three import lines changed.

- Embeddings: word + position + token type, LayerNorm, dropout.
- Encoder layers, post-LN as in BERT: x = LN(x + Dropout(Attn(x))),
  x = LN(x + Dropout(FFN(x))), GELU (erf) in the FFN; attention over the
  non-padding keys (an additive -10000 mask, as BERT's).
- Pooler: tanh(Linear(h[CLS])).
- Masked-LM head on the masked positions only: their hidden states are
  gathered from the sequence output (B x P of the B x T positions), then
  Linear + GELU + LayerNorm and the decoder, whose weight is the word
  embedding's (tied) plus its own bias. Predictions whose label is -1 are
  padding (fewer than P masked tokens in a short sequence) and count for
  nothing, as in NVIDIA's implementation.
- Next-sentence head: Linear(hidden, 2) on the pooled output.

`BertConfig()` is BERT-base (hidden 768, 12 layers, 12 heads, FFN 3072,
vocabulary 30522, 512 positions); the tests and CPU runs shrink it.
"""

import math
from dataclasses import dataclass

import torch
import torch.nn as nn
from torch.nn import functional as F


@dataclass
class BertConfig:
    vocab_size: int = 30522
    hidden_size: int = 768
    num_hidden_layers: int = 12
    num_attention_heads: int = 12
    intermediate_size: int = 3072
    max_position_embeddings: int = 512
    type_vocab_size: int = 2
    hidden_dropout_prob: float = 0.1
    attention_probs_dropout_prob: float = 0.1
    layer_norm_eps: float = 1e-12
    initializer_range: float = 0.02


class BertEmbeddings(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.word_embeddings = nn.Embedding(config.vocab_size, config.hidden_size)
        self.position_embeddings = nn.Embedding(config.max_position_embeddings,
                                                config.hidden_size)
        self.token_type_embeddings = nn.Embedding(config.type_vocab_size, config.hidden_size)
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)

    def forward(self, input_ids, token_type_ids):
        positions = torch.arange(input_ids.shape[1])
        x = (self.word_embeddings(input_ids) + self.position_embeddings(positions)
             + self.token_type_embeddings(token_type_ids))
        return self.dropout(self.LayerNorm(x))


class BertSelfAttention(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.num_attention_heads = config.num_attention_heads
        self.attention_head_size = config.hidden_size // config.num_attention_heads
        self.query = nn.Linear(config.hidden_size, config.hidden_size)
        self.key = nn.Linear(config.hidden_size, config.hidden_size)
        self.value = nn.Linear(config.hidden_size, config.hidden_size)
        self.dropout = nn.Dropout(config.attention_probs_dropout_prob)

    def heads(self, x):  # [B, T, H] -> [B, heads, T, head size]
        B, T, _ = x.shape
        return x.view(B, T, self.num_attention_heads, self.attention_head_size).transpose(1, 2)

    def forward(self, hidden, attention_bias):
        q = self.heads(self.query(hidden))
        k = self.heads(self.key(hidden))
        v = self.heads(self.value(hidden))
        scores = q @ k.transpose(-1, -2) / math.sqrt(self.attention_head_size)
        probs = self.dropout(F.softmax(scores + attention_bias, dim=-1))
        context = (probs @ v).transpose(1, 2)
        B, T = context.shape[0], context.shape[1]
        return context.reshape(B, T, self.num_attention_heads * self.attention_head_size)


class BertSelfOutput(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)

    def forward(self, hidden, residual):
        return self.LayerNorm(self.dropout(self.dense(hidden)) + residual)


class BertAttention(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.self = BertSelfAttention(config)
        self.output = BertSelfOutput(config)

    def forward(self, hidden, attention_bias):
        return self.output(self.self(hidden, attention_bias), hidden)


class BertIntermediate(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.intermediate_size)

    def forward(self, hidden):
        return F.gelu(self.dense(hidden))


class BertOutput(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.dense = nn.Linear(config.intermediate_size, config.hidden_size)
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)

    def forward(self, hidden, residual):
        return self.LayerNorm(self.dropout(self.dense(hidden)) + residual)


class BertLayer(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.attention = BertAttention(config)
        self.intermediate = BertIntermediate(config)
        self.output = BertOutput(config)

    def forward(self, hidden, attention_bias):
        attended = self.attention(hidden, attention_bias)
        return self.output(self.intermediate(attended), attended)


class BertEncoder(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.layer = nn.ModuleList([BertLayer(config) for _ in range(config.num_hidden_layers)])

    def forward(self, hidden, attention_bias):
        for layer in self.layer:
            hidden = layer(hidden, attention_bias)
        return hidden


class BertPooler(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)

    def forward(self, hidden):
        return torch.tanh(self.dense(hidden[:, 0]))


class BertModel(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.embeddings = BertEmbeddings(config)
        self.encoder = BertEncoder(config)
        self.pooler = BertPooler(config)

    def forward(self, input_ids, token_type_ids, attention_mask):
        # [B, T] 1/0 for tokens/padding -> an additive bias over the keys
        bias = (1.0 - attention_mask[:, None, None, :].float()) * -10000.0
        hidden = self.encoder(self.embeddings(input_ids, token_type_ids), bias)
        return hidden, self.pooler(hidden)


class BertLMPredictionHead(nn.Module):
    def __init__(self, config, word_embeddings):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.decoder = nn.Linear(config.hidden_size, config.vocab_size, bias=False)
        self.decoder.weight = word_embeddings.weight  # tied
        self.bias = nn.Parameter(torch.zeros(config.vocab_size))

    def forward(self, hidden):
        hidden = self.LayerNorm(F.gelu(self.dense(hidden)))
        return self.decoder(hidden) + self.bias


class BertPreTrainingHeads(nn.Module):
    def __init__(self, config, word_embeddings):
        super().__init__()
        self.predictions = BertLMPredictionHead(config, word_embeddings)
        self.seq_relationship = nn.Linear(config.hidden_size, 2)

    def forward(self, masked_hidden, pooled):
        return self.predictions(masked_hidden), self.seq_relationship(pooled)


class BertForPreTraining(nn.Module):
    """BERT with its two pretraining heads. forward(input_ids, token_type_ids,
    attention_mask, masked_lm_positions, masked_lm_labels,
    next_sentence_labels) returns (MLM logits [B, P, V], NSP logits [B, 2],
    loss): the loss is the MLM cross entropy over the predictions whose
    label is not -1 plus the NSP cross entropy."""

    def __init__(self, config):
        super().__init__()
        self.config = config
        self.bert = BertModel(config)
        self.cls = BertPreTrainingHeads(config, self.bert.embeddings.word_embeddings)
        self.apply(self._init_weights)

    def _init_weights(self, module):
        std = self.config.initializer_range
        if isinstance(module, nn.Linear):
            nn.init.normal_(module.weight, mean=0.0, std=std)
            if module.bias is not None:
                nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            nn.init.normal_(module.weight, mean=0.0, std=std)
        elif isinstance(module, nn.LayerNorm):
            nn.init.ones_(module.weight)
            nn.init.zeros_(module.bias)

    def forward(self, input_ids, token_type_ids, attention_mask, masked_lm_positions,
                masked_lm_labels=None, next_sentence_labels=None):
        sequence, pooled = self.bert(input_ids, token_type_ids, attention_mask)
        H = sequence.shape[-1]
        # the hidden states of the masked positions: [B, P] -> [B, P, H]
        index = masked_lm_positions.unsqueeze(-1).expand(-1, -1, H)
        masked = torch.gather(sequence, 1, index)
        mlm_logits, nsp_logits = self.cls(masked, pooled)
        if masked_lm_labels is None:
            return mlm_logits, nsp_logits
        mlm = F.cross_entropy(mlm_logits.reshape(-1, mlm_logits.shape[-1]).float(),
                              masked_lm_labels.reshape(-1), ignore_index=-1)
        nsp = F.cross_entropy(nsp_logits.float(), next_sentence_labels)
        return mlm_logits, nsp_logits, mlm + nsp


def parameter_groups(model, weight_decay):
    """AdamW's two groups as BERT's: weight decay on the weights of the
    linear layers and embeddings, none on LayerNorm gains and shifts and on
    biases."""
    decay, no_decay = [], []
    for name, p in model.named_parameters():
        (no_decay if name.endswith("bias") or "LayerNorm" in name else decay).append(p)
    return [{"params": decay, "weight_decay": weight_decay},
            {"params": no_decay, "weight_decay": 0.0}]
