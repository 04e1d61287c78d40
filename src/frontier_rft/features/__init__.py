"""Task features and derived metadata for pools built from prompts alone.

- `text_features(prompts)`: hashed tokens, TF-IDF, truncated SVD (scikit-learn, lazily).
- `policy_embeddings(model, tokenizer, prompts)`: the policy's own mean-pooled hidden
  states (torch, lazily), for trainers.
- `derive`: what each selector takes from the pool or derives, with the source named.
"""

from frontier_rft.features.policy import policy_embeddings
from frontier_rft.features.text import TextFeatureConfig, text_features

__all__ = ["TextFeatureConfig", "policy_embeddings", "text_features"]
