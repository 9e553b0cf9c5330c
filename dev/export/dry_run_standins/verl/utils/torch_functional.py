"""Stand-in of veRL's learning-rate schedulers (torch_functional.py:702, 840): their signatures, and
veRL's refusal of a schedule with no steps."""


def _schedule(optimizer, num_warmup_steps, num_training_steps, min_lr_ratio=0.0, num_cycles=0.5, last_epoch=-1):
    assert 0 <= num_warmup_steps <= num_training_steps and num_training_steps > 0, (num_warmup_steps, num_training_steps)
    return optimizer


get_cosine_schedule_with_warmup = _schedule
get_wsd_schedule_with_warmup = _schedule
