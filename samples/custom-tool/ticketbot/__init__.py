"""ticketbot: a longrun sample with a tool that reads, a tool with an effect, and a model of its own."""
