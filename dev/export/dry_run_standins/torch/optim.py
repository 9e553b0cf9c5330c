class AdamW:
    def __init__(self, params, lr):
        self.params, self.lr = list(params), lr
