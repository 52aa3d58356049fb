"""App-layer defaults that the command line shows in its help, in a module that imports nothing
(start-up time): the modules that use them import them from here."""

DEFAULT_EMBEDDED = "127.0.0.1:1883"   # where `twin run --mqtt`'s embedded broker listens
