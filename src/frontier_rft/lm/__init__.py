"""What the reference trainer and ZIP-RC-Lite inference both do with a causal LM.

`model_io` loads and saves a model with its tokenizer (a Hugging Face directory, a named
pretrained model of `pretrained`, or a GGUF file); `tokenizer` holds the locally trained
BPE and its chat template; `decoding` says how completions are drawn (`Sampling`: how many,
how long, temperature, top-p); `rollout` encodes prompts, samples completions and scores
them token by token; `device` resolves the torch device and the precision's autocast.
Needs the `train` extra (torch, transformers). Nothing here is imported by `frontier_rft`
itself: import the submodules you use.
"""
