"""The generation lab: a decoder, token by token, with each kind of key/value cache."""
