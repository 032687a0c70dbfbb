"""The rules, one room: what a replay treats as generated, ignored, unordered or secret
(`ruleset`: the rules file read, the A2A defaults), the value kinds a rule may name (`kinds`),
how a recorded value pairs with a live one (`pairing`: rules 1-4, used forward by the player,
by the recorder's grouping, in reverse by the stand-in), and the narrowest rules that absorb
what differs between live replies (`noise`). Pure."""
