class MissingConfigException(IOError):
    pass
