"""A deterministic Obsidian-like vault for the known-item benchmark (bench/known_items.py).

`write_vault(root, language, notes, seed)` writes Markdown notes the way a real
documentation or Zettelkasten vault holds them: folders and sub-folders, file
names that are the note's name, an H1 that is sometimes the name, sometimes
another title ("Accueil.md" titled "Aide du carnet") and sometimes absent,
frontmatter aliases on about a third of the notes, H2/H3 sections whose
headings share words with each other ("Renommer une note" / "Supprimer une
note") and with other notes, generic headings many notes share ("Voir
aussi"), shared names (the same file name in several folders: "Index",
"Aperçu"), names that are prefixes or plurals of others ("Paramètres" /
"Paramètres de langue", "Espace de travail" / "Espaces de travail"), and
wiki-links (`[[Name]]`, `[[Name|label]]`, `[[Name#Heading]]`) whose text
repeats other notes' names in the bodies. French and English, the same shapes.

The same seed writes the same bytes (no clock, no set order).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from pathlib import Path

import yaml


@dataclass(frozen=True)
class Words:
    """One language's material."""

    topics: tuple[str, ...]  # note names, each a concept of the vault
    qualifiers: tuple[str, ...]  # "{topic} {qualifier}": a longer name that starts with a shorter one
    plural: dict[str, str]  # topic → plural name: one stem, two notes
    folders: tuple[str, ...]
    shared: tuple[str, ...]  # file names several folders hold
    home: tuple[str, str]  # (file name, its H1): a name that is not its title
    actions: tuple[str, ...]  # heading verbs: "{action} {object}"
    objects: tuple[str, ...]
    generic: tuple[str, ...]  # headings many notes share
    sentences: tuple[str, ...]  # with {topic}, {other}, {action}, {object}, {link}
    alias_forms: tuple[str, ...]  # "{topic}" → an alias
    joiner: str  # "{topic} {joiner} {topic}"
    within: str  # "{action} {object} {within} {topic}"


FR = Words(
    topics=(
        "Paramètres",
        "Espace de travail",
        "Guide de style",
        "Traductions",
        "Synchronisation",
        "Modèles",
        "Vue graphique",
        "Recherche",
        "Raccourcis clavier",
        "Liens internes",
        "Notes quotidiennes",
        "Dossiers",
        "Pièces jointes",
        "Étiquettes",
        "Propriétés",
        "Thèmes",
        "Extensions",
        "Publication",
        "Sauvegarde",
        "Historique des versions",
        "Canevas",
        "Signets",
        "Tableaux",
        "Citations",
        "Mise en forme",
        "Intégrations",
        "Plan",
        "Fichiers",
        "Coffre",
        "Importation",
        "Exportation",
        "Compte",
        "Abonnement",
        "Sécurité",
        "Confidentialité",
        "Mises à jour",
        "Installation",
        "Dépannage",
        "Éditeur",
        "Palette de commandes",
        "Volet latéral",
        "Onglets",
        "Fenêtres",
        "Mode lecture",
        "Mode source",
        "Requêtes",
        "Filtres",
        "Rétroliens",
        "Carte mentale",
        "Journal de bord",
        "Projets",
        "Réunions",
        "Lectures",
        "Idées",
        "Tâches",
        "Calendrier",
        "Archives",
        "Brouillons",
        "Glossaire",
        "Interopérabilité",
        "Agents",
        "Sources",
        "Bibliographie",
        "Méthode Zettelkasten",
        "Revue hebdomadaire",
        "Objectifs",
        "Habitudes",
        "Contacts",
        "Budget",
        "Voyages",
    ),
    qualifiers=("de langue", "avancés", "sur mobile", "du coffre", "par défaut", "en équipe", "hors ligne"),
    plural={"Espace de travail": "Espaces de travail", "Modèles": "Modèle", "Onglets": "Onglet", "Filtres": "Filtre"},
    folders=(
        "Guide",
        "Guide/Éditeur",
        "Guide/Organisation",
        "Référence",
        "Extensions",
        "Extensions/Communauté",
        "Journal/2024",
        "Journal/2025",
        "Projets",
        "Projets/Clients",
        "Archives",
        "Zettel",
    ),
    shared=("Index", "Aperçu", "À lire", "Questions fréquentes"),
    home=("Accueil", "Aide du carnet"),
    actions=(
        "Créer",
        "Renommer",
        "Supprimer",
        "Déplacer",
        "Partager",
        "Copier",
        "Ouvrir",
        "Fermer",
        "Modifier",
        "Restaurer",
        "Importer",
        "Exporter",
        "Configurer",
        "Activer",
        "Désactiver",
        "Trier",
        "Fusionner",
        "Épingler",
    ),
    objects=(
        "une note",
        "un dossier",
        "une pièce jointe",
        "un modèle",
        "un lien",
        "une étiquette",
        "un onglet",
        "une propriété",
        "un canevas",
        "un signet",
        "une requête",
        "un filtre",
        "un projet",
        "une tâche",
    ),
    generic=("Voir aussi", "Exemple", "Configuration", "Limites", "Références", "Notes"),
    sentences=(
        "Pour {action_l} {object}, ouvrez {link} puis choisissez l'option voulue.",
        "{topic} dépend de {other_l} : commencez par vérifier ce réglage.",
        "On peut aussi {action_l} {object} depuis {link} sans quitter la note.",
        "Cette section décrit comment {topic_l} se comporte quand on veut {action_l} {object}.",
        "Voir {link} pour les détails, en particulier si vous utilisez {other_l}.",
        "Avant de {action_l} {object}, pensez à la sauvegarde et à l'historique des versions.",
        "{other} et {topic_l} partagent les mêmes raccourcis, décrits dans {link}.",
        "La plupart des utilisateurs découvrent {topic_l} en voulant {action_l} {object}.",
        "Un clic droit sur {object} propose de le {action_l} ou de l'envoyer vers {link}.",
        "Le guide de style recommande de nommer chaque note d'après son idée principale.",
        "Les changements sont enregistrés automatiquement ; {link} explique comment les retrouver.",
        "Dans l'espace de travail, {topic_l} apparaît dans le volet latéral, à côté de {other_l}.",
    ),
    alias_forms=("{topic} (notes)", "À propos de {topic_l}", "{acronym}", "{topic_l} — mémo"),
    joiner="et",
    within="dans",
)

EN = Words(
    topics=(
        "Settings",
        "Workspace",
        "Style guide",
        "Translations",
        "Sync",
        "Templates",
        "Graph view",
        "Search",
        "Hotkeys",
        "Internal links",
        "Daily notes",
        "Folders",
        "Attachments",
        "Tags",
        "Properties",
        "Themes",
        "Plugins",
        "Publish",
        "Backups",
        "Version history",
        "Canvas",
        "Bookmarks",
        "Tables",
        "Quotes",
        "Formatting",
        "Integrations",
        "Outline",
        "Files",
        "Vault",
        "Import",
        "Export",
        "Account",
        "Subscription",
        "Security",
        "Privacy",
        "Updates",
        "Installation",
        "Troubleshooting",
        "Editor",
        "Command palette",
        "Sidebar",
        "Tabs",
        "Windows",
        "Reading view",
        "Source mode",
        "Queries",
        "Filters",
        "Backlinks",
        "Mind map",
        "Logbook",
        "Projects",
        "Meetings",
        "Reading list",
        "Ideas",
        "Tasks",
        "Calendar",
        "Archive",
        "Drafts",
        "Glossary",
        "Interoperability",
        "Agents",
        "Sources",
        "Bibliography",
        "Zettelkasten method",
        "Weekly review",
        "Goals",
        "Habits",
        "Contacts",
        "Budget",
        "Travel",
    ),
    qualifiers=("for languages", "advanced", "on mobile", "of the vault", "by default", "for teams", "offline"),
    plural={"Workspace": "Workspaces", "Templates": "Template", "Tabs": "Tab", "Filters": "Filter"},
    folders=(
        "Guide",
        "Guide/Editor",
        "Guide/Organising",
        "Reference",
        "Plugins",
        "Plugins/Community",
        "Journal/2024",
        "Journal/2025",
        "Projects",
        "Projects/Clients",
        "Archive",
        "Zettel",
    ),
    shared=("Index", "Overview", "To read", "FAQ"),
    home=("Home", "Notebook help"),
    actions=(
        "Create",
        "Rename",
        "Delete",
        "Move",
        "Share",
        "Copy",
        "Open",
        "Close",
        "Edit",
        "Restore",
        "Import",
        "Export",
        "Configure",
        "Enable",
        "Disable",
        "Sort",
        "Merge",
        "Pin",
    ),
    objects=(
        "a note",
        "a folder",
        "an attachment",
        "a template",
        "a link",
        "a tag",
        "a tab",
        "a property",
        "a canvas",
        "a bookmark",
        "a query",
        "a filter",
        "a project",
        "a task",
    ),
    generic=("See also", "Example", "Configuration", "Limitations", "References", "Notes"),
    sentences=(
        "To {action_l} {object}, open {link} and pick the option you need.",
        "{topic} depends on {other_l}: check that setting first.",
        "You can also {action_l} {object} from {link} without leaving the note.",
        "This section describes how {topic_l} behaves when you want to {action_l} {object}.",
        "See {link} for the details, especially if you use {other_l}.",
        "Before you {action_l} {object}, think of backups and version history.",
        "{other} and {topic_l} share the same hotkeys, described in {link}.",
        "Most people discover {topic_l} when they try to {action_l} {object}.",
        "Right-click {object} to {action_l} it or send it to {link}.",
        "The style guide recommends naming each note after its main idea.",
        "Changes are saved automatically; {link} explains how to find them again.",
        "In the workspace, {topic_l} shows in the sidebar, next to {other_l}.",
    ),
    alias_forms=("{topic} (notes)", "About {topic_l}", "{acronym}", "{topic_l} cheatsheet"),
    joiner="and",
    within="in",
)

WORDS = {"fr": FR, "en": EN}


@dataclass
class PlannedNote:
    path: str  # relative, with .md
    name: str  # file name without .md
    h1: str | None
    aliases: list[str] = field(default_factory=list)
    sections: list[tuple[int, str]] = field(default_factory=list)  # (level, heading)


def _lower_first(text: str) -> str:
    return text[:1].lower() + text[1:] if text[:1].isupper() and not text[1:2].isupper() else text


def _acronym(text: str) -> str:
    letters = [w[0] for w in text.replace("-", " ").split() if w[:1].isalpha()]
    return "".join(letters).upper() + "X" if len(letters) < 3 else "".join(letters).upper()


def plan(language: str, count: int, seed: int) -> list[PlannedNote]:
    """Which notes the vault holds: names, folders, titles, aliases, sections."""
    words, rng = WORDS[language], random.Random(f"{seed}-{language}")
    names: list[str] = list(words.topics)
    names += [words.plural[t] for t in words.topics if t in words.plural]
    for topic in words.topics[: len(words.topics) // 2]:
        names.append(f"{topic} {rng.choice(words.qualifiers)}")
    names = list(dict.fromkeys(names))
    rng.shuffle(names)
    # Beyond the concepts, notes as a Zettelkasten grows them: a concept
    # narrowed, two concepts together, an action on a thing within a concept.
    forms = (
        lambda: f"{rng.choice(words.topics)} {rng.choice(words.qualifiers)}",
        lambda: f"{rng.choice(words.topics)} {words.joiner} {_lower_first(rng.choice(words.topics))}",
        lambda: " ".join(
            (rng.choice(words.actions), rng.choice(words.objects), words.within, _lower_first(rng.choice(words.topics)))
        ),
    )
    seen = set(names)
    for attempt in range(count * 20):
        if len(names) + len(words.shared) * 3 + 1 >= count:
            break
        name = forms[(0, 0, 1, 2, 2)[attempt % 5]]()
        if name not in seen:
            seen.add(name)
            names.append(name)
    notes: list[PlannedNote] = []
    home_name, home_title = words.home
    notes.append(PlannedNote(f"{home_name}.md", home_name, home_title))
    for shared in words.shared:  # the same file name in three folders
        for folder in rng.sample(words.folders, 3):
            notes.append(PlannedNote(f"{folder}/{shared}.md", shared, None))
    for name in names[: max(0, count - len(notes))]:
        folder = rng.choice(("", *words.folders))
        path = f"{folder}/{name}.md" if folder else f"{name}.md"
        roll = rng.random()
        if roll < 0.55:
            h1: str | None = name
        elif roll < 0.8:
            h1 = None
        else:  # a title that is not the file name (the file name must still find it)
            h1 = f"{rng.choice(words.topics)} : {_lower_first(name)}" if roll < 0.9 else rng.choice(words.topics)
        notes.append(PlannedNote(path, name, h1))
    # Section headings: each "{action} {object}" (with a qualifier under it) in
    # one note of the vault only, as a documentation vault has them; the
    # generic ones ("Voir aussi") in many.
    pool = [f"{a} {o}" for a in words.actions for o in words.objects]
    rng.shuffle(pool)
    for note in notes:
        topic_l = _lower_first(note.name)
        if rng.random() < 0.35:
            chosen = rng.sample(words.alias_forms, rng.choice((1, 1, 2)))
            note.aliases = [f.format(topic=note.name, topic_l=topic_l, acronym=_acronym(note.name)) for f in chosen]
        generic: set[str] = set()
        for _ in range(rng.randint(2, 5)):
            if rng.random() < 0.25 or not pool:
                heading = rng.choice(words.generic)
                if heading in generic:
                    continue
                generic.add(heading)
                note.sections.append((2, heading))
                continue
            heading = pool.pop()
            note.sections.append((2, heading))
            if rng.random() < 0.3:
                note.sections.append((3, f"{heading} {rng.choice(words.qualifiers)}"))
    return notes


def _sentence(rng: random.Random, words: Words, note: PlannedNote, notes: list[PlannedNote], heading: str) -> str:
    other = rng.choice(notes)
    target = rng.choice(notes)
    label = rng.random()
    if label < 0.6:
        link = f"[[{target.name}]]"
    elif label < 0.8 and target.sections:
        link = f"[[{target.name}#{rng.choice(target.sections)[1]}]]"
    else:
        link = f"[[{target.name}|{_lower_first(target.name)}]]"
    action, obj = rng.choice(words.actions), rng.choice(words.objects)
    first, _, rest = heading.partition(" ")
    if first in words.actions and rng.random() < 0.5:  # a section speaks of its own action, and of others
        action = first
        obj = next((o for o in words.objects if rest.startswith(o)), obj)
    # A note names itself now and then; most of what it names are other notes.
    topic = note.name if rng.random() < 0.3 else rng.choice(notes).name
    return rng.choice(words.sentences).format(
        topic=topic,
        topic_l=_lower_first(topic),
        other=other.name,
        other_l=_lower_first(other.name),
        action_l=action.lower(),
        object=obj,
        link=link,
    )


def render(note: PlannedNote, notes: list[PlannedNote], language: str, rng: random.Random) -> str:
    words = WORDS[language]
    out: list[str] = []
    meta: dict[str, object] = {}
    if note.aliases:
        meta["aliases"] = note.aliases
    if rng.random() < 0.3:
        meta["tags"] = [rng.choice(("guide", "référence", "zettel", "projet", "journal"))]
    if meta:
        out.append("---\n" + yaml.safe_dump(meta, allow_unicode=True, sort_keys=False) + "---\n")
    if note.h1 is not None:
        out.append(f"# {note.h1}\n")
    out.append(" ".join(_sentence(rng, words, note, notes, note.name) for _ in range(rng.randint(1, 3))) + "\n")
    for level, heading in note.sections:
        out.append(f"{'#' * level} {heading}\n")
        for _ in range(rng.randint(1, 2)):
            out.append(" ".join(_sentence(rng, words, note, notes, heading) for _ in range(rng.randint(2, 4))) + "\n")
    return "\n".join(out)


def write_vault(root: Path, language: str, count: int = 300, seed: int = 29) -> list[PlannedNote]:
    """Write about `count` notes under `root` (replacing nothing else); the plan."""
    notes = plan(language, count, seed)
    rng = random.Random(f"{seed}-{language}-bodies")
    for note in notes:
        path = root / note.path
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(render(note, notes, language, rng), encoding="utf-8")
    return notes
