"""The agents benchmark: a harness around `workbench.agents`, not part of it. Real runs replayed
(`replay`: real providers' accepted logs cut by each framework's editing and by ours), the
scripted world (`world`, a simulation) driven through each framework's real loop (`drivers`,
`runs`), the judge written apart from the trimmer (`judge`), each hook's own time (`hooks`), and
notebook 11's tables and prose (`report`)."""
