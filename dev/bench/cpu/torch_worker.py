"""The PyTorch side of `npm run bench:cpu`: the same Llama + LoRA work as the tfjs-wasm worker.

A minimal Hugging Face Llama forward (embedding, RMSNorm, RoPE, grouped-query attention, SwiGLU,
tied head) in float32 with LoRA on every projection, read from the same safetensors file. Commands
come one JSON line at a time on stdin; each answer is one line on stdout starting with "@@".
One thread (torch.set_num_threads(1)); the BLAS is whatever libblas.so.3 the loader finds (the
orchestrator points LD_LIBRARY_PATH at OpenBLAS when it is installed and reports what was mapped).
"""

import json
import math
import resource
import sys
import time

import torch

torch.set_num_threads(1)
torch.manual_seed(0)


def read_safetensors(path):
    with open(path, "rb") as f:
        raw = f.read()
    n = int.from_bytes(raw[:8], "little")
    header = json.loads(raw[8 : 8 + n])
    base = 8 + n
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        a, b = info["data_offsets"]
        dt = {"F32": torch.float32, "BF16": torch.bfloat16, "F16": torch.float16}[info["dtype"]]
        t = torch.frombuffer(bytearray(raw[base + a : base + b]), dtype=dt)
        out[name] = t.reshape(info["shape"]).float()
    return out


class Llama:
    def __init__(self, cfg, w, rank):
        self.c = cfg
        self.H = cfg["hidden_size"]
        self.nH = cfg["num_attention_heads"]
        self.nKV = cfg["num_key_value_heads"]
        self.D = cfg.get("head_dim") or self.H // self.nH
        self.eps = cfg["rms_norm_eps"]
        self.embed = w["model.embed_tokens.weight"]
        self.norm = w["model.norm.weight"]
        self.head = w.get("lm_head.weight", self.embed)
        half = self.D // 2
        self.inv_freq = 1.0 / (cfg["rope_theta"] ** (torch.arange(0, half, dtype=torch.float64) * 2 / self.D))
        self.layers = []
        self.lora = []
        g = torch.Generator().manual_seed(1)
        for i in range(cfg["num_hidden_layers"]):
            p = f"model.layers.{i}."
            names = dict(q="self_attn.q_proj", k="self_attn.k_proj", v="self_attn.v_proj", o="self_attn.o_proj",
                         gate="mlp.gate_proj", up="mlp.up_proj", down="mlp.down_proj")
            L = {"n1": w[p + "input_layernorm.weight"], "n2": w[p + "post_attention_layernorm.weight"]}
            for k, n in names.items():
                W = w[p + n + ".weight"]
                out_f, in_f = W.shape
                bound = 1 / math.sqrt(in_f)
                A = ((torch.rand(rank, in_f, generator=g) * 2 - 1) * bound).requires_grad_()
                B = torch.zeros(out_f, rank).requires_grad_()
                L[k] = (W, A, B)
                self.lora += [A, B]
            self.layers.append(L)
        self.scale = 2.0  # alpha 2r / r
        self.lora_on = True

    def lin(self, x, wab):
        W, A, B = wab
        y = x @ W.t()
        if self.lora_on:
            y = y + (x @ A.t()) @ B.t() * self.scale
        return y

    def rms(self, x, w):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * w

    def forward(self, ids, cache=None, start=0, keep=0):
        """Logits of the last `keep` positions (0: all), as transformers' logits_to_keep."""
        Bt, L = ids.shape
        pos = torch.arange(start, start + L, dtype=torch.float64)
        ang = pos[:, None] * self.inv_freq[None, :]
        cos = torch.cat([ang.cos(), ang.cos()], -1).float()
        sin = torch.cat([ang.sin(), ang.sin()], -1).float()
        C = start + L
        causal = torch.full((L, C), float("-inf")).triu(start + 1)
        x = self.embed[ids]
        G = self.nH // self.nKV
        for li, ly in enumerate(self.layers):
            h = self.rms(x, ly["n1"])
            q = self.lin(h, ly["q"]).view(Bt, L, self.nH, self.D).transpose(1, 2)
            k = self.lin(h, ly["k"]).view(Bt, L, self.nKV, self.D).transpose(1, 2)
            v = self.lin(h, ly["v"]).view(Bt, L, self.nKV, self.D).transpose(1, 2)
            q = q * cos + rot(q) * sin
            k = k * cos + rot(k) * sin
            if cache is not None:
                cache[0][li][:, :, start:C] = k
                cache[1][li][:, :, start:C] = v
                k = cache[0][li][:, :, :C]
                v = cache[1][li][:, :, :C]
            qg = q.reshape(Bt, self.nKV, G * L, self.D)
            s = (qg @ k.transpose(-1, -2)) / math.sqrt(self.D)
            p = torch.softmax(s.view(Bt, self.nKV, G, L, C) + causal, -1).view(Bt, self.nKV, G * L, C)
            a = (p @ v).view(Bt, self.nH, L, self.D).transpose(1, 2).reshape(Bt, L, self.nH * self.D)
            x = x + self.lin(a, ly["o"])
            h2 = self.rms(x, ly["n2"])
            x = x + self.lin(torch.nn.functional.silu(self.lin(h2, ly["gate"])) * self.lin(h2, ly["up"]), ly["down"])
        if keep:
            x = x[:, -keep:]
        return self.rms(x, self.norm) @ self.head.t()

    def new_cache(self, Bt, cap):
        shape = (Bt, self.nKV, cap, self.D)
        n = len(self.layers)
        return ([torch.zeros(shape) for _ in range(n)], [torch.zeros(shape) for _ in range(n)])


def rot(x):
    h = x.shape[-1] // 2
    return torch.cat([-x[..., h:], x[..., :h]], -1)


def prompts(n, length, V):
    return torch.tensor([[(3 + 7 * t + 11 * b) % V for t in range(length)] for b in range(n)])


@torch.no_grad()
def generate(m, ids, new, sample):
    Bt, P = ids.shape
    cache = m.new_cache(Bt, P + new)
    logits = m.forward(ids, cache, 0, keep=1)[:, 0]
    out = []
    for t in range(new):
        lp = torch.log_softmax(logits, -1)
        tok = torch.multinomial(lp.exp(), 1)[:, 0] if sample else lp.argmax(-1)
        # per-token log-prob and entropy, as the rollout reports them
        _ = lp.gather(1, tok[:, None]), -(lp.exp() * lp).sum(-1)
        out.append(tok)
        if t + 1 < new:
            logits = m.forward(tok[:, None], cache, P + t, keep=1)[:, 0]
    return torch.stack(out, 1)


def learn(m, opt, ids, P, adv):
    """GRPO's PPO-clip token-mean loss on the responses, backward, clip to norm 1, AdamW. The
    forward runs over the P + T - 1 inputs that predict a response token and the head over the T
    positions the loss reads (logits_to_keep = T), the work policy.ts's policyStats does."""
    T = ids.shape[1] - P
    logits = m.forward(ids[:, :-1], keep=T)
    lp = torch.log_softmax(logits, -1)
    resp = ids[:, P:]
    logp = lp.gather(2, resp[..., None])[..., 0]
    with torch.no_grad():
        _ = -(lp.exp() * lp).sum(-1).mean()  # entropy/mean metric
    old = logp.detach()
    ratio = torch.exp(logp - old)
    a = adv[:, None]
    pg = torch.maximum(-a * ratio, -a * ratio.clamp(0.8, 1.2))
    loss = pg.mean()
    opt.zero_grad()
    loss.backward()
    torch.nn.utils.clip_grad_norm_(m.lora, 1.0)
    opt.step()
    return float(loss)


def main():
    m = None
    opt = None
    V = 0
    for line in sys.stdin:
        cmd = json.loads(line)
        op = cmd["op"]
        res = {}
        if op == "load":
            cfg = json.load(open(cmd["config"]))
            m = Llama(cfg, read_safetensors(cmd["weights"]), cmd["rank"])
            opt = torch.optim.AdamW(m.lora, lr=1e-3, weight_decay=0.01)
            V = cfg["vocab_size"]
            blas = sorted({l.split()[-1] for l in open("/proc/self/maps") if "blas" in l.lower()})
            res = {"torch": torch.__version__, "blas": blas, "threads": torch.get_num_threads()}
        elif op == "logits":
            with torch.no_grad():
                m.lora_on = False
                lg = m.forward(prompts(cmd["B"], cmd["L"], V))
                m.lora_on = True
            pos = cmd["positions"]
            res = {"logits": lg[:, pos].reshape(-1).tolist()}
        elif op == "greedy":
            with torch.no_grad():
                res = {"tokens": generate(m, prompts(cmd["B"], cmd["P"], V), cmd["new"], False).tolist()}
        elif op == "work":
            w = cmd["work"]
            t0 = time.perf_counter()
            c0 = time.process_time()
            if w["kind"] == "forward":
                with torch.no_grad():
                    m.forward(prompts(w["B"], w["L"], V))
            elif w["kind"] == "decode":
                generate(m, prompts(w["B"], w["P"], V), w["new"], False)
            elif w["kind"] == "learn":
                ids = prompts(w["B"], w["P"] + w["T"], V)
                adv = torch.tensor([(-1.0) ** b for b in range(w["B"])])
                learn(m, opt, ids, w["P"], adv)
            elif w["kind"] == "grpo":
                rows = w["prompts"] * w["group"]
                pr = prompts(w["prompts"], w["P"], V).repeat_interleave(w["group"], 0)
                torch.manual_seed(cmd.get("seed", 0))
                resp = generate(m, pr, w["new"], True)
                ids = torch.cat([pr, resp], 1)
                adv = torch.tensor([(b % 2) - 0.5 for b in range(rows)])
                with torch.no_grad():  # reference log-probs: adapters off, learn()'s positions
                    m.lora_on = False
                    torch.log_softmax(m.forward(ids[:, :-1], keep=w["new"]), -1)
                    m.lora_on = True
                learn(m, opt, ids, w["P"], adv)
            res = {"ms": (time.perf_counter() - t0) * 1000, "cpuMs": (time.process_time() - c0) * 1000}
        elif op == "memory":
            res = {"peakRssBytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024}
        elif op == "quit":
            break
        print("@@" + json.dumps(res), flush=True)


if __name__ == "__main__":
    main()
