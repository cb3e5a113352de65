"""Fit a small DQN and REINFORCE on the synthetic scenario and print their weights' digests.

Run by tests/policies/test_cross_cpu.py natively and under qemu-user with another CPU model:
the digests must agree. The last line is a control: the digest of torch's own float32 sqrt,
which MKL's vector math computes differently on AVX-512 and AVX2 CPUs (so it shows that the
emulated CPU really takes other code paths)."""

import hashlib

import numpy as np


def digest(arrays) -> str:
    h = hashlib.sha256()
    for a in arrays:
        h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()[:16]


def main() -> None:
    from mirage.policies import make_policy  # sets the code-path pins before torch loads
    from mirage.policies.synthetic import make_synthetic
    import torch

    train = make_synthetic(n_train=12, n_val=2, seed=0, history=False).validate().split("train")
    fits = {
        "dqn": {"total_timesteps": 600, "learning_starts": 200, "batch_size": 64},
        "pg": {"updates": 4},
    }
    for name, params in fits.items():
        policy = make_policy(name, **params).fit(train, seed=5)
        print(name, digest(p.detach().numpy() for p in policy.net_.parameters()))
    x = torch.from_numpy(np.random.default_rng(1).random(4099).astype(np.float32))
    print("control_sqrt", digest([x.sqrt().numpy()]))


if __name__ == "__main__":
    main()
