"""Stand-in of verl.workers.config: HFModelConfig as the mirror of veRL's declared fields."""
from verl.utils.config import BUILD

HFModelConfig = BUILD("HFModelConfig")
